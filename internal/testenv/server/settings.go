package server

// StartPostgresWith is StartPostgres with more settings, each
// "name=value", given to the server as -c after the harness's own, which
// they override (the last -c of a name wins): "synchronous_commit=off".
func StartPostgresWith(dir string, settings ...string) (*Process, error) {
	args := limitArgs(200, "-c", "max_connections=")
	for _, s := range settings {
		args = append(args, "-c", s)
	}
	return startPostgres(dir, args)
}

// StartMariaDBWith is StartMariaDB with more options, each
// "--name=value", given to the server after the harness's own, which
// they override (the last of a name wins):
// "--innodb-flush-log-at-trx-commit=0".
func StartMariaDBWith(dir string, options ...string) (*Process, error) {
	return startMariaDB(dir, append(limitArgs(300, "--max-connections="), options...))
}

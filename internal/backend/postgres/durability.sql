-- What decides whether a commit, and so a grant, survives a crash of the
-- server or a failover to a standby, as distlock's own sessions have it
-- (a role's, a database's or the URL's settings included): setting,
-- value. current_setting needs no privilege for these.
SELECT 'synchronous_commit', current_setting('synchronous_commit')
UNION ALL SELECT 'fsync', current_setting('fsync')
UNION ALL SELECT 'synchronous_standby_names', current_setting('synchronous_standby_names')

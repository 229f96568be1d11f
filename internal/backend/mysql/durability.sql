-- What decides whether a commit, and so a grant, survives a crash of the
-- server or of its machine: setting, value. Reading a system variable
-- needs no privilege.
SELECT 'innodb_flush_log_at_trx_commit' AS setting, CAST(@@innodb_flush_log_at_trx_commit AS CHAR) AS value
UNION ALL SELECT 'log_bin', IF(@@log_bin, 'ON', 'OFF')
UNION ALL SELECT 'sync_binlog', CAST(@@sync_binlog AS CHAR)

-- Create an entry of a key's run ledger, or replace it whole (VALUES():
-- MariaDB has no row alias; MySQL 8.0.20+ only warns).
-- Arguments: prefix, key, id, data.
INSERT INTO distlock_ledger (prefix, lock_key, id, data) VALUES (?, ?, ?, ?)
ON DUPLICATE KEY UPDATE data = VALUES(data)

-- The server's connection limit for distlock's role (superusers may use
-- the slots reserved for them too), named as the doctor names it, and the
-- client connections in use: setting, used, limit.
WITH r AS (SELECT coalesce((SELECT rolsuper FROM pg_roles WHERE rolname = current_user), false) AS super)
SELECT CASE WHEN super THEN 'max_connections' ELSE 'max_connections less superuser_reserved_connections' END,
       (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int,
       current_setting('max_connections')::int
         - CASE WHEN super THEN 0 ELSE current_setting('superuser_reserved_connections')::int END
FROM r

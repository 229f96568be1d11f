-- The server's connection limit for distlock's role (superusers may use
-- the slots reserved for them too) and the client connections in use.
SELECT current_setting('max_connections')::int,
       current_setting('superuser_reserved_connections')::int,
       (SELECT rolsuper FROM pg_roles WHERE rolname = current_user),
       (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int

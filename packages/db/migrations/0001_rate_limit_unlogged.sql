-- Rate-limit counters are disposable: skip the WAL for them.
ALTER TABLE "rate_limit_counters" SET UNLOGGED;
--> statement-breakpoint
-- Every API process caches applications by key; any change to a row (from any process, the CLI
-- included) tells all of them to drop it, so disabling or rotating takes effect at once.
CREATE OR REPLACE FUNCTION svc_notify_application_changed() RETURNS trigger AS $$
BEGIN
  PERFORM pg_notify('svc_application_changed', OLD.id);
  RETURN NULL;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
CREATE TRIGGER applications_changed_notify
  AFTER UPDATE OR DELETE ON "applications"
  FOR EACH ROW EXECUTE FUNCTION svc_notify_application_changed();

-- Applications are cached with their organization's slug and name; when an organization changes,
-- every API process drops its whole application cache (`*`). Organization changes are rare.
CREATE OR REPLACE FUNCTION svc_notify_organization_changed() RETURNS trigger AS $$
BEGIN
  PERFORM pg_notify('svc_application_changed', '*');
  RETURN NULL;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
CREATE TRIGGER organizations_changed_notify
  AFTER UPDATE OR DELETE ON "organizations"
  FOR EACH ROW EXECUTE FUNCTION svc_notify_organization_changed();

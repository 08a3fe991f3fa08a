-- users.memberships_version changes whenever what a session check shows of the user's
-- memberships changes: a membership added, removed or given another role, or an organization
-- they belong to renamed, re-slugged or deleted (its memberships cascade, firing the first
-- trigger). Each API process caches memberships per user and version; the session check reads
-- the version with the session, so a change is seen by the very next request on every process.
CREATE FUNCTION svc_bump_memberships_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    UPDATE users SET memberships_version = memberships_version + 1 WHERE id = NEW.user_id;
  END IF;
  IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.user_id IS DISTINCT FROM NEW.user_id) THEN
    UPDATE users SET memberships_version = memberships_version + 1 WHERE id = OLD.user_id;
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER memberships_version AFTER INSERT OR UPDATE OR DELETE ON memberships
  FOR EACH ROW EXECUTE FUNCTION svc_bump_memberships_version();
--> statement-breakpoint
CREATE FUNCTION svc_bump_members_on_organization_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE users SET memberships_version = memberships_version + 1
  WHERE id IN (SELECT user_id FROM memberships WHERE tenant_id = NEW.id);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER organizations_members_version AFTER UPDATE ON organizations
  FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.slug IS DISTINCT FROM NEW.slug OR OLD.kind IS DISTINCT FROM NEW.kind)
  EXECUTE FUNCTION svc_bump_members_on_organization_change();

-- The audit log is append-only (docs/architecture.md section 5): entries are evidence, so neither an
-- application bug nor a compromised API process may rewrite or erase them. TRUNCATE is refused
-- too. Removing entries (retention) is an operator's deliberate act: drop the trigger first.
CREATE FUNCTION svc_audit_logs_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_logs is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;
--> statement-breakpoint
CREATE TRIGGER audit_logs_append_only BEFORE UPDATE OR DELETE ON audit_logs
  FOR EACH ROW EXECUTE FUNCTION svc_audit_logs_append_only();
--> statement-breakpoint
CREATE TRIGGER audit_logs_no_truncate BEFORE TRUNCATE ON audit_logs
  FOR EACH STATEMENT EXECUTE FUNCTION svc_audit_logs_append_only();

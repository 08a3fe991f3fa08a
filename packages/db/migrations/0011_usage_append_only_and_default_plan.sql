-- Usage events are append-only (docs/api.md "Usage"): an event once recorded is never rewritten or
-- removed by the application. The one exception is the organization's own deletion, whose cascade
-- removes its events: the row is deletable once its organization no longer exists.
CREATE FUNCTION svc_usage_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND NOT EXISTS (SELECT 1 FROM organizations WHERE id = OLD.tenant_id) THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'usage_events is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;
--> statement-breakpoint
CREATE TRIGGER usage_events_append_only BEFORE UPDATE OR DELETE ON usage_events
  FOR EACH ROW EXECUTE FUNCTION svc_usage_events_append_only();
--> statement-breakpoint
CREATE TRIGGER usage_events_no_truncate BEFORE TRUNCATE ON usage_events
  FOR EACH STATEMENT EXECUTE FUNCTION svc_usage_events_append_only();
--> statement-breakpoint
-- A fresh installation has a default plan `free` (10 seats, no usage limits) unless one exists (docs/api.md).
INSERT INTO subscription_plans (id, key, name, seat_limit, usage_limits, is_default)
SELECT 'pln_' || substr(md5(random()::text || clock_timestamp()::text), 1, 20), 'free', 'Free', 10, '{}'::jsonb, 'yes'
WHERE NOT EXISTS (SELECT 1 FROM subscription_plans WHERE is_default = 'yes')
ON CONFLICT (key) DO NOTHING;
--> statement-breakpoint
-- Every tenant organization has a subscription: a new one gets the default plan, active, in the
-- transaction that creates it, whatever code path creates it.
CREATE FUNCTION svc_subscribe_new_tenant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.kind = 'tenant' THEN
    INSERT INTO subscriptions (tenant_id, plan_id, status)
    SELECT NEW.id, p.id, 'active' FROM subscription_plans p WHERE p.is_default = 'yes'
    ON CONFLICT (tenant_id) DO NOTHING;
  END IF;
  RETURN NEW;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER organizations_subscribe_new_tenant AFTER INSERT ON organizations
  FOR EACH ROW EXECUTE FUNCTION svc_subscribe_new_tenant();
--> statement-breakpoint
INSERT INTO subscriptions (tenant_id, plan_id, status)
SELECT o.id, p.id, 'active' FROM organizations o CROSS JOIN subscription_plans p
WHERE o.kind = 'tenant' AND p.is_default = 'yes'
ON CONFLICT (tenant_id) DO NOTHING;

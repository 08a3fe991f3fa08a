-- Usage events, webhook events (the events feed) and the audit log become tables partitioned by
-- month of created_at (docs/operations.md "Partitioned tables"). PostgreSQL cannot turn a table
-- into a partitioned one in place: each is renamed, a partitioned table of the same columns takes
-- its name, its rows are copied into monthly partitions, and the old table is dropped, all in this
-- migration's transaction (no row written meanwhile can miss the copy: the rename locks the table).
--
-- A partitioned table's unique indexes must hold the partition key, so:
-- - the primary keys become (id, created_at); ids are random, so an id stays unique;
-- - the foreign keys pointing at usage_events(id) and webhook_events(id) go (their rows leave with
--   their organization, or by retention: see svc_drop_partitions_before);
-- - usage_events' (tenant_id, idempotency_key) uniqueness moves to usage_event_keys, not partitioned.
-- Each table also gets a DEFAULT partition: a row written with a created_at before its first month
-- (an import, a test fixture) lands there rather than failing. The months ahead are always made
-- before they start, so in the normal course the default partition stays empty.
CREATE TABLE "usage_event_keys" (
	"tenant_id" text NOT NULL,
	"idempotency_key" text NOT NULL,
	"event_id" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "usage_event_keys_tenant_id_idempotency_key_pk" PRIMARY KEY("tenant_id","idempotency_key")
);
--> statement-breakpoint
ALTER TABLE "usage_event_keys" ADD CONSTRAINT "usage_event_keys_tenant_id_organizations_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "billing_sync_logs" DROP CONSTRAINT "billing_sync_logs_usage_event_id_usage_events_id_fk";--> statement-breakpoint
ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_event_id_webhook_events_id_fk";--> statement-breakpoint
-- Monthly partitions `<parent>_pYYYYMM` (UTC months) covering [first, last]; existing ones are kept.
-- The maintenance:partitions task calls it every day for the months ahead. Returns how many it made.
CREATE FUNCTION svc_create_monthly_partitions(parent text, first timestamptz, last timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  month timestamp := date_trunc('month', first AT TIME ZONE 'UTC');
  made integer := 0;
  partition text;
BEGIN
  WHILE month <= last AT TIME ZONE 'UTC' LOOP
    partition := parent || '_p' || to_char(month, 'YYYYMM');
    IF to_regclass(format('public.%I', partition)) IS NULL THEN
      EXECUTE format('CREATE TABLE public.%I PARTITION OF public.%I FOR VALUES FROM (%L) TO (%L)',
        partition, parent, month AT TIME ZONE 'UTC', (month + interval '1 month') AT TIME ZONE 'UTC');
      made := made + 1;
    END IF;
    month := month + interval '1 month';
  END LOOP;
  RETURN made;
END $$;--> statement-breakpoint
-- Retention: drops the monthly partitions of `parent` that end at or before `cutoff` (whole months
-- only: a month partly inside the window stays). What points at the dropped rows goes with them:
-- the deliveries of dropped events, the idempotency keys of dropped usage events. Returns the
-- partitions dropped.
CREATE FUNCTION svc_drop_partitions_before(parent text, cutoff timestamptz) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
  partition text;
  month_end timestamptz;
BEGIN
  FOR partition IN
    SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = format('public.%I', parent)::regclass AND c.relname ~ ('^' || parent || '_p[0-9]{6}$')
    ORDER BY c.relname
  LOOP
    month_end := (to_timestamp(right(partition, 6), 'YYYYMM')::timestamp + interval '1 month') AT TIME ZONE 'UTC';
    CONTINUE WHEN month_end > cutoff;
    IF parent = 'webhook_events' THEN
      EXECUTE format('DELETE FROM webhook_deliveries d USING public.%I e WHERE d.event_id = e.id', partition);
    ELSIF parent = 'usage_events' THEN
      EXECUTE format('DELETE FROM usage_event_keys k USING public.%I e WHERE k.event_id = e.id AND k.tenant_id = e.tenant_id AND k.created_at = e.created_at', partition);
    END IF;
    EXECUTE format('DROP TABLE public.%I', partition);
    RETURN NEXT partition;
  END LOOP;
END $$;--> statement-breakpoint
-- usage_events
ALTER TABLE "usage_events" RENAME TO "usage_events_unpartitioned";--> statement-breakpoint
CREATE TABLE "usage_events" (LIKE "usage_events_unpartitioned" INCLUDING DEFAULTS) PARTITION BY RANGE ("created_at");--> statement-breakpoint
SELECT svc_create_monthly_partitions('usage_events', coalesce((SELECT min(created_at) FROM usage_events_unpartitioned), now()), now() + interval '3 months');--> statement-breakpoint
CREATE TABLE "usage_events_default" PARTITION OF "usage_events" DEFAULT;--> statement-breakpoint
INSERT INTO "usage_event_keys" ("tenant_id", "idempotency_key", "event_id", "created_at")
  SELECT "tenant_id", "idempotency_key", "id", "created_at" FROM "usage_events_unpartitioned";--> statement-breakpoint
INSERT INTO "usage_events" SELECT * FROM "usage_events_unpartitioned";--> statement-breakpoint
DROP TABLE "usage_events_unpartitioned";--> statement-breakpoint
ALTER TABLE "usage_events" ADD CONSTRAINT "usage_events_id_created_at_pk" PRIMARY KEY("id","created_at");--> statement-breakpoint
ALTER TABLE "usage_events" ADD CONSTRAINT "usage_events_tenant_id_organizations_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "usage_events_tenant_created_idx" ON "usage_events" USING btree ("tenant_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "usage_events_tenant_type_occurred_idx" ON "usage_events" USING btree ("tenant_id","event_type","occurred_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "usage_event_keys_created_idx" ON "usage_event_keys" USING btree ("created_at");--> statement-breakpoint
-- The append-only rule of migration 0011, on the partitioned table (row triggers reach every partition).
CREATE TRIGGER usage_events_append_only BEFORE UPDATE OR DELETE ON usage_events
  FOR EACH ROW EXECUTE FUNCTION svc_usage_events_append_only();--> statement-breakpoint
CREATE TRIGGER usage_events_no_truncate BEFORE TRUNCATE ON usage_events
  FOR EACH STATEMENT EXECUTE FUNCTION svc_usage_events_append_only();--> statement-breakpoint
-- webhook_events
ALTER TABLE "webhook_events" RENAME TO "webhook_events_unpartitioned";--> statement-breakpoint
CREATE TABLE "webhook_events" (LIKE "webhook_events_unpartitioned" INCLUDING DEFAULTS) PARTITION BY RANGE ("created_at");--> statement-breakpoint
SELECT svc_create_monthly_partitions('webhook_events', coalesce((SELECT min(created_at) FROM webhook_events_unpartitioned), now()), now() + interval '3 months');--> statement-breakpoint
CREATE TABLE "webhook_events_default" PARTITION OF "webhook_events" DEFAULT;--> statement-breakpoint
INSERT INTO "webhook_events" SELECT * FROM "webhook_events_unpartitioned";--> statement-breakpoint
DROP TABLE "webhook_events_unpartitioned";--> statement-breakpoint
ALTER TABLE "webhook_events" ADD CONSTRAINT "webhook_events_id_created_at_pk" PRIMARY KEY("id","created_at");--> statement-breakpoint
ALTER TABLE "webhook_events" ADD CONSTRAINT "webhook_events_tenant_id_organizations_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhook_events_tenant_created_idx" ON "webhook_events" USING btree ("tenant_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "webhook_events_tenant_type_created_idx" ON "webhook_events" USING btree ("tenant_id","type","created_at","id");--> statement-breakpoint
CREATE INDEX "webhook_events_tenant_xid_idx" ON "webhook_events" USING btree ("tenant_id","xid","id");--> statement-breakpoint
CREATE INDEX "webhook_events_tenant_type_xid_idx" ON "webhook_events" USING btree ("tenant_id","type","xid","id");--> statement-breakpoint
-- audit_logs
ALTER TABLE "audit_logs" RENAME TO "audit_logs_unpartitioned";--> statement-breakpoint
CREATE TABLE "audit_logs" (LIKE "audit_logs_unpartitioned" INCLUDING DEFAULTS) PARTITION BY RANGE ("created_at");--> statement-breakpoint
SELECT svc_create_monthly_partitions('audit_logs', coalesce((SELECT min(created_at) FROM audit_logs_unpartitioned), now()), now() + interval '3 months');--> statement-breakpoint
CREATE TABLE "audit_logs_default" PARTITION OF "audit_logs" DEFAULT;--> statement-breakpoint
INSERT INTO "audit_logs" SELECT * FROM "audit_logs_unpartitioned";--> statement-breakpoint
-- DROP deletes no row and truncates nothing: the old table's append-only triggers do not fire.
DROP TABLE "audit_logs_unpartitioned";--> statement-breakpoint
ALTER TABLE "audit_logs" ADD CONSTRAINT "audit_logs_id_created_at_pk" PRIMARY KEY("id","created_at");--> statement-breakpoint
CREATE INDEX "audit_logs_tenant_created_idx" ON "audit_logs" USING btree ("tenant_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "audit_logs_created_idx" ON "audit_logs" USING btree ("created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "audit_logs_tenant_action_created_idx" ON "audit_logs" USING btree ("tenant_id","action","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "audit_logs_tenant_actor_created_idx" ON "audit_logs" USING btree ("tenant_id","actor_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "audit_logs_tenant_target_created_idx" ON "audit_logs" USING btree ("tenant_id","target_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "audit_logs_tenant_resource_created_idx" ON "audit_logs" USING btree ("tenant_id",split_part("action", '.', 1),"created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
-- The append-only rule of migration 0006 on the partitioned table. Retention's DROP of a whole
-- month deletes no row, so it passes; nothing else removes an entry.
CREATE TRIGGER audit_logs_append_only BEFORE UPDATE OR DELETE ON audit_logs
  FOR EACH ROW EXECUTE FUNCTION svc_audit_logs_append_only();--> statement-breakpoint
CREATE TRIGGER audit_logs_no_truncate BEFORE TRUNCATE ON audit_logs
  FOR EACH STATEMENT EXECUTE FUNCTION svc_audit_logs_append_only();

-- The events feed's order (GET /v1/events): each event row carries its writing transaction's id
-- (xid8), from the column default, so every writer records it unchanged. The column is added
-- empty, filled for the rows already there, then given its default and NOT NULL.
ALTER TABLE "webhook_events" ADD COLUMN "xid" "xid8";--> statement-breakpoint
-- Rows written before this migration all committed before it: they get distinct values just
-- below this migration's own transaction id, in created_at (then id) order, so the feed serves
-- them first and in the order they happened. (A database with more events than transactions so
-- far has no room below: the surplus shares 0 and is ordered by id among itself.)
UPDATE "webhook_events" AS e
SET "xid" = greatest(pg_current_xact_id()::text::bigint - r.total - 1 + r.rank, 0)::text::xid8
FROM (
  SELECT id, row_number() OVER (ORDER BY created_at, id) AS rank, count(*) OVER () AS total
  FROM "webhook_events"
) AS r
WHERE e.id = r.id;--> statement-breakpoint
ALTER TABLE "webhook_events" ALTER COLUMN "xid" SET DEFAULT pg_current_xact_id();--> statement-breakpoint
ALTER TABLE "webhook_events" ALTER COLUMN "xid" SET NOT NULL;--> statement-breakpoint
CREATE INDEX "webhook_events_tenant_xid_idx" ON "webhook_events" USING btree ("tenant_id","xid","id");--> statement-breakpoint
CREATE INDEX "webhook_events_tenant_type_xid_idx" ON "webhook_events" USING btree ("tenant_id","type","xid","id");

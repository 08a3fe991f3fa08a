DROP INDEX "webhook_deliveries_event_endpoint_key";--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "replay" boolean DEFAULT false NOT NULL;--> statement-breakpoint
CREATE INDEX "webhook_events_tenant_type_created_idx" ON "webhook_events" USING btree ("tenant_id","type","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_deliveries_event_endpoint_key" ON "webhook_deliveries" USING btree ("event_id","endpoint_id") WHERE not "webhook_deliveries"."replay";
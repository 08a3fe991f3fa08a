-- Memberships get a status: invited (added by an organization, not accepted yet), active, or
-- suspended (in that organization only). Every membership that exists already was entered or
-- used under the old rules: the column's default makes each one active, so none is lost. A status
-- change is an UPDATE of the row, which the memberships_version trigger (0008) already counts.
ALTER TABLE "memberships" ADD COLUMN "status" text DEFAULT 'active' NOT NULL;--> statement-breakpoint
ALTER TABLE "memberships" ADD COLUMN "invited_email" text;--> statement-breakpoint
ALTER TABLE "memberships" ADD COLUMN "invited_name" text;--> statement-breakpoint
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_status_check" CHECK ("memberships"."status" in ('invited', 'active', 'suspended'));

CREATE TABLE "usage_summary_hours" (
	"hour" timestamp with time zone PRIMARY KEY NOT NULL,
	"organizations" integer NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "usage_threshold_crossings" (
	"tenant_id" text NOT NULL,
	"event_type" text NOT NULL,
	"period_start" timestamp with time zone NOT NULL,
	"threshold" integer NOT NULL,
	"usage_limit" bigint NOT NULL,
	"used" bigint NOT NULL,
	"plan" text NOT NULL,
	"event_id" text NOT NULL,
	"reached_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "usage_threshold_crossings_tenant_id_event_type_period_start_threshold_pk" PRIMARY KEY("tenant_id","event_type","period_start","threshold")
);
--> statement-breakpoint
ALTER TABLE "subscription_plans" ADD COLUMN "usage_thresholds" integer[] DEFAULT '{50,80,100}'::integer[] NOT NULL;--> statement-breakpoint
ALTER TABLE "usage_threshold_crossings" ADD CONSTRAINT "usage_threshold_crossings_tenant_id_organizations_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;
CREATE TABLE "session_applications" (
	"session_id" text NOT NULL,
	"application_id" text NOT NULL,
	"organization_id" text,
	"first_signed_in_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"last_signed_in_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"ended_at" timestamp (3) with time zone,
	CONSTRAINT "session_applications_session_id_application_id_pk" PRIMARY KEY("session_id","application_id")
);
--> statement-breakpoint
ALTER TABLE "session_applications" ADD CONSTRAINT "session_applications_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_applications" ADD CONSTRAINT "session_applications_application_id_applications_id_fk" FOREIGN KEY ("application_id") REFERENCES "public"."applications"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_applications" ADD CONSTRAINT "session_applications_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "session_applications_application_idx" ON "session_applications" USING btree ("application_id") WHERE "session_applications"."ended_at" is null;--> statement-breakpoint
CREATE INDEX "session_applications_organization_idx" ON "session_applications" USING btree ("organization_id") WHERE "session_applications"."ended_at" is null;
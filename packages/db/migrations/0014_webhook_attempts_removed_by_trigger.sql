ALTER TABLE "webhook_delivery_attempts" DROP CONSTRAINT "webhook_delivery_attempts_delivery_id_webhook_deliveries_id_fk";
--> statement-breakpoint
-- The cascade the dropped key did, once per statement: a delivery's attempts go with it, whether
-- it is deleted alone or by the cascade from its endpoint, its event or its organization.
CREATE FUNCTION svc_webhook_deliveries_remove_attempts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM webhook_delivery_attempts a USING removed r WHERE a.delivery_id = r.id;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER webhook_deliveries_remove_attempts AFTER DELETE ON webhook_deliveries
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION svc_webhook_deliveries_remove_attempts();

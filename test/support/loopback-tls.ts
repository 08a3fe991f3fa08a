/**
 * A self-signed certificate for localhost and 127.0.0.1 (and its key), for the https servers tests
 * run on loopback: a client metadata document's URL must be https. svc does not verify TLS on
 * loopback when loopback is allowed (WEBHOOK_ALLOW_PRIVATE; @svc/jobs/webhooks/guarded-fetch), so
 * this certificate proves nothing and guards nothing: it only lets the test server speak TLS.
 */
export const LOOPBACK_TLS = {
  key: `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgJrloNDCqbKS0V4Ml
NxsExgnh+EZRpVyhe+2EqYyYRrahRANCAASUDJXYa6fq1pfgtv+BXJPF2Uw9Pw8b
syIMMcOxSK+2CexqSFfW5r6JcFy8wySDw0wE/d91/xYsLrSsmTFhSajl
-----END PRIVATE KEY-----`,
  cert: `-----BEGIN CERTIFICATE-----
MIIBmjCCAUGgAwIBAgIURqY5UrLNOyng7E2T9A1SvoVfOzIwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyOTA4NDMzM1oYDzIxMjYxMTA1
MDg0MzMzWjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAASUDJXYa6fq1pfgtv+BXJPF2Uw9Pw8bsyIMMcOxSK+2CexqSFfW5r6J
cFy8wySDw0wE/d91/xYsLrSsmTFhSajlo28wbTAdBgNVHQ4EFgQUhKKI3gRJLw8h
nDcu98n65CW0bzIwHwYDVR0jBBgwFoAUhKKI3gRJLw8hnDcu98n65CW0bzIwDwYD
VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI
zj0EAwIDRwAwRAIgfHztJ4ClxkLa4fKutWkKyr8zaI+pPrZDbt6CDuNe+hECIHDQ
HLK5RTJxk6aGyEk6H8VhZatW7DFgsYB2HEmZTz5G
-----END CERTIFICATE-----`,
};

/**
 * svc's default ports on a developer's machine. svc runs next to the app being integrated, so
 * neither may be a port a framework or a common local service takes by default, or the second of
 * the two to start fails (or, worse, answers the other's requests):
 *
 * - framework dev servers: 3000 (Express, Next.js, Rails, Remix, Nuxt), 3001 (the usual "next
 *   free" one), 4000 (Phoenix, Jekyll), 4200 (Angular), 4321 (Astro), 5000 (Flask; macOS AirPlay
 *   Receiver), 5173 and 4173 (Vite), 6006 (Storybook), 8000 (Django, FastAPI/uvicorn, Laravel
 *   `artisan serve`), 8080 (Spring, Tomcat, Go examples, webpack), 8081 (Metro), 8501 (Streamlit),
 *   8888 (Jupyter);
 * - local services: 5432, 6379, 3306, 27017, 7000 (macOS AirPlay Receiver, Cassandra), 7233
 *   (Temporal), 7474 (Neo4j), 7700 (Meilisearch), 7860 (Gradio), 9000 (Authentik, MinIO, PHP-FPM,
 *   SonarQube), 9090 (Prometheus), 9200 (Elasticsearch), 9229 (Node's inspector), 54321 (Supabase);
 * - ports Chromium refuses to load (its restricted list, e.g. 6000, 6665-6669, 10080);
 * - the ephemeral range (32768 and up on Linux), where an outgoing connection may hold it.
 *
 * 7150 and 7151 meet all of that and sit side by side, so `ss -ltn | grep 715` shows both.
 */
export const SVC_DEFAULT_PORT = 7150;

/** The in-process development identity engine (apps/dev-engine); see SVC_DEFAULT_PORT. */
export const DEV_ENGINE_DEFAULT_PORT = 7151;

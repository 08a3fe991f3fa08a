import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from './support/server.ts';
import { REPO_ROOT } from './support/spawn.ts';

/**
 * The Kubernetes manifests (deploy/kubernetes/, docs/operations.md "Kubernetes") and
 * docker-compose.yml run the roles svc has (`serve --no-worker`, `worker`, `migrate`), and the
 * probes point at paths a real svc answers 200. No YAML library is a dependency here, so the
 * manifests are read with patterns for the shapes they are written in; a manifest rewritten in
 * another shape fails here and the patterns follow it.
 */

const DIR = path.join(REPO_ROOT, 'deploy/kubernetes');

type Doc = { file: string; kind: string; name: string; text: string };

function documents(): Doc[] {
  return readdirSync(DIR)
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .flatMap((file) =>
      readFileSync(path.join(DIR, file), 'utf8')
        .split(/^---$/m)
        .map((text) => ({
          file,
          kind: /^kind:\s*(\S+)/m.exec(text)?.[1] ?? '',
          name: /^metadata:\s*\n\s+name:\s*(\S+)/m.exec(text)?.[1] ?? '',
          text,
        })),
    );
}

function find(kind: string, name: string): Doc {
  const doc = documents().find((d) => d.kind === kind && d.name === name);
  expect(doc, `${kind} ${name} in deploy/kubernetes`).toBeDefined();
  return doc as Doc;
}

function probe(doc: Doc, which: 'readinessProbe' | 'livenessProbe' | 'startupProbe'): { path: string; port: string } {
  const m = new RegExp(`${which}:\\s*\\n\\s*httpGet:\\s*\\n\\s*path:\\s*(\\S+)\\s*\\n\\s*port:\\s*(\\S+)`).exec(doc.text);
  expect(m, `${doc.name}'s ${which} (httpGet path, port)`).not.toBeNull();
  return { path: (m as RegExpExecArray)[1] as string, port: (m as RegExpExecArray)[2] as string };
}

const argsOf = (doc: Doc) => JSON.parse(/^\s+args:\s*(\[.*\])\s*$/m.exec(doc.text)?.[1] ?? 'null') as unknown;
const selectorOf = (doc: Doc) => /matchLabels:\s*(\{[^}]*\})/.exec(doc.text)?.[1];
const templateLabelsOf = (doc: Doc) => /template:\s*\n\s+metadata:\s*\n\s+labels:\s*(\{[^}]*\})/.exec(doc.text)?.[1];

describe('deploy/kubernetes and docker-compose.yml', () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('kustomization.yaml applies every manifest in the folder', () => {
    const listed = readFileSync(path.join(DIR, 'kustomization.yaml'), 'utf8');
    const files = [...new Set(documents().map((d) => d.file))];
    expect(files.length).toBeGreaterThanOrEqual(4);
    for (const file of files) {
      expect(listed).toContain(`- ${file}`);
    }
  });

  it('the API Deployment runs serve --no-worker with readiness on /readyz and liveness on /healthz, paths svc answers 200', async () => {
    const api = find('Deployment', 'svc-api');
    expect(argsOf(api)).toEqual(['serve', '--no-worker']);
    const readiness = probe(api, 'readinessProbe');
    const liveness = probe(api, 'livenessProbe');
    const startup = probe(api, 'startupProbe');
    expect(readiness.path).toBe('/readyz');
    expect(liveness.path).toBe('/healthz');
    // The probes' port is the container port svc listens on.
    const port = /-\s*\{\s*name:\s*(\S+),\s*containerPort:\s*(\d+)\s*\}/.exec(api.text);
    expect(port?.[2]).toBe(/name:\s*PORT,\s*value:\s*"(\d+)"/.exec(api.text)?.[1]);
    for (const p of [readiness, liveness, startup]) {
      expect(p.port).toBe(port?.[1]);
      const res = await fetch(`${server.url}${p.path}`);
      expect(res.status, p.path).toBe(200);
    }
    // The checks discriminate: a path svc does not serve is no probe target.
    expect((await fetch(`${server.url}/ready`)).status).toBe(404);
    // The grace period covers the preStop pause and svc's own drain deadline.
    const grace = Number(/terminationGracePeriodSeconds:\s*(\d+)/.exec(api.text)?.[1]);
    const pause = Number(/command:\s*\["sleep",\s*"(\d+)"\]/.exec(api.text)?.[1]);
    const drainMs = Number(/SHUTDOWN_TIMEOUT_MS:\s*"(\d+)"/.exec(find('ConfigMap', 'svc-config').text)?.[1]);
    expect(pause).toBeGreaterThan(0);
    expect(drainMs).toBeGreaterThan(0);
    expect(grace * 1000).toBeGreaterThanOrEqual(pause * 1000 + drainMs);
  });

  it('a disruption budget and the Service select exactly the API pods', () => {
    const api = find('Deployment', 'svc-api');
    const labels = templateLabelsOf(api);
    expect(labels).toContain('component: api');
    expect(selectorOf(api)).toBe(labels);
    const pdb = find('PodDisruptionBudget', 'svc-api');
    expect(selectorOf(pdb)).toBe(labels);
    expect(pdb.text).toMatch(/maxUnavailable:\s*1\b/);
    expect(/selector:\s*(\{[^}]*\})/.exec(find('Service', 'svc-api').text)?.[1]).toBe(labels);
  });

  it('the worker Deployment runs svc worker and the migration Job svc migrate, on the same settings', () => {
    const worker = find('Deployment', 'svc-worker');
    const migrate = find('Job', 'svc-migrate');
    expect(argsOf(worker)).toEqual(['worker']);
    expect(argsOf(migrate)).toEqual(['migrate']);
    expect(templateLabelsOf(worker)).toContain('component: worker');
    for (const doc of [find('Deployment', 'svc-api'), worker, migrate]) {
      expect(doc.text).toContain('configMapRef: { name: svc-config }');
      expect(doc.text).toContain('secretRef: { name: svc }');
    }
  });

  it('docker-compose.yml runs the same three roles', () => {
    const compose = readFileSync(path.join(REPO_ROOT, 'docker-compose.yml'), 'utf8');
    const command = (service: string) =>
      JSON.parse(new RegExp(`^  ${service}:\\n(?:    .*\\n)*?    command:\\s*(\\[.*\\])`, 'm').exec(compose)?.[1] ?? 'null') as unknown;
    expect(command('migrate')).toEqual(['migrate']);
    expect(command('api')).toEqual(['serve', '--no-worker']);
    expect(command('worker')).toEqual(['worker']);
    expect(compose).toMatch(/readyz/);
  });
});

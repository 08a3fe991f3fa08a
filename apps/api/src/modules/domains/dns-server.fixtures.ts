import dns2 from 'dns2';

const { Packet } = dns2;

/** A DNS server of the test's own on 127.0.0.1 (UDP), answering TXT lookups from `records`. */
export type TestDnsServer = {
  /** `127.0.0.1:<port>`: DNS_RESOLVER for the server under test. */
  address: string;
  /** TXT values by lower-case name, each value one record; change them between lookups. */
  records: Map<string, string[]>;
  /** Names the server never answers (a lookup of them times out). */
  silent: Set<string>;
  /** Every name asked for, in order. */
  asked: string[];
  close: () => Promise<void>;
};

export async function startDnsServer(): Promise<TestDnsServer> {
  const records = new Map<string, string[]>();
  const silent = new Set<string>();
  const asked: string[] = [];
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const name = (request.questions[0]?.name ?? '').toLowerCase();
      asked.push(name);
      if (silent.has(name)) {
        return;
      }
      const values = records.get(name);
      if (!values) {
        // NXDOMAIN.
        (response as unknown as { header: { rcode: number } }).header.rcode = 3;
      }
      for (const value of values ?? []) {
        // dns2's encoder takes the plain fields; its types ask for a class instance.
        (response.answers as unknown[]).push({ name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 60, data: value });
      }
      send(response);
    },
  });
  const addresses = (await server.listen({ udp: { port: 0, address: '127.0.0.1' } })) as unknown as { udp: { port: number } };
  return {
    address: `127.0.0.1:${addresses.udp.port}`,
    records,
    silent,
    asked,
    close: () => server.close() as unknown as Promise<void>,
  };
}

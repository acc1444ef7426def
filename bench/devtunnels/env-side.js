// The benchmark's peer, environment side: Microsoft's Dev Tunnels SSH stack (@microsoft/dev-tunnels-ssh and
// -ssh-tcp) serving SSH sessions over WebSockets, the role env-gateway has in the tunnel. Started by the
// benchmark (benchmarks: DevTunnelsPeer); docs/performance.md, "Method", says how it is configured.
//
//   node env-side.js --cipher none|aes256-gcm
//
// A `ws` WebSocketServer on 127.0.0.1:0; per WebSocket one SshServerSession with the PortForwardingService,
// wrapped by the library's own WebSocketStream adapter. Prints one JSON line when listening:
//   {"event":"ready","port":N,"cipher":"...","versions":{...}}
// and one JSON line per session once its key exchange is done, with the negotiated algorithms.
//
// This is a performance peer, not a product: every client is accepted (SSH "none" authentication; with
// --cipher aes256-gcm the host key is a fresh one per process and the client accepts any). What it does
// enforce: channels go to loopback targets only, any other host is refused.
'use strict';

const { WebSocketServer } = require('ws');
const ssh = require('@microsoft/dev-tunnels-ssh');
const common = require('./common');

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

async function main() {
  const opts = common.parseArgs(process.argv.slice(2));
  const config = common.sessionConfig(opts.cipher);
  // The host key exists only where key exchange happens (no security: no key exchange, no host key).
  const hostKeys = opts.cipher === 'none' ? []
    : [await ssh.SshAlgorithms.publicKey.ecdsaSha2Nistp384.generateKeyPair()];

  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  wss.on('connection', (socket) => {
    const stream = new ssh.WebSocketStream(common.wsForStream(socket, opts.cipher));
    const session = new ssh.SshServerSession(config);
    session.credentials = { publicKeys: hostKeys };
    const negotiated = common.traceNegotiation(session);
    // Any client is accepted: a performance peer (see the head of this file).
    session.onAuthenticating((e) => { e.authenticationPromise = Promise.resolve({}); });
    // Only loopback targets: the PortForwardingService passes each direct-tcpip channel open through the
    // session's onChannelOpening event before it connects; a failure reason set here refuses the channel.
    session.onChannelOpening((e) => {
      const host = e.request && e.request.host;
      if (!LOOPBACK.has(String(host))) {
        e.failureReason = ssh.SshChannelOpenFailureReason.administrativelyProhibited;
        e.failureDescription = 'loopback targets only';
        common.log({ event: 'refused', host: String(host), port: e.request && e.request.port });
      }
    });
    session.onClosed(() => socket.terminate());
    session.connect(stream).then(() => {
      common.log({ event: 'session', algorithms: common.algorithms(negotiated) });
    }, (err) => {
      common.log({ event: 'sessionFailed', error: String(err && err.message || err) });
      socket.terminate();
    });
  });
  wss.on('listening', () => {
    common.ready({ event: 'ready', port: wss.address().port, cipher: opts.cipher, versions: common.versions() });
  });
  common.exitOnSignals(() => wss.close());
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

// The benchmark's peer, desktop side: ONE WebSocket to env-side.js, one SshClientSession over it (the library's
// WebSocketStream adapter), and a local TCP port forwarded to each target port given, the role desktop-ingress
// has in the tunnel (PortForwardingService.forwardToRemotePort: each accepted connection opens a direct-tcpip
// channel to 127.0.0.1:TARGET on the environment side).
//
//   node desktop-side.js --cipher none|aes256-gcm ws://127.0.0.1:PORT TARGET_PORT...
//
// Prints one JSON line when every forward listens:
//   {"event":"ready","ports":[LOCAL...],"algorithms":{...},"versions":{...}}
// with the local ports (127.0.0.1, ephemeral) in the order of the target ports.
//
// A performance peer: any host key is accepted and the client authenticates with SSH "none" (env-side.js
// accepts every client).
'use strict';

const WebSocket = require('ws');
const ssh = require('@microsoft/dev-tunnels-ssh');
const { PortForwardingService } = require('@microsoft/dev-tunnels-ssh-tcp');
const common = require('./common');

async function main() {
  const opts = common.parseArgs(process.argv.slice(2));
  const [url, ...targets] = opts.rest;
  if (!url || targets.length === 0) {
    throw new Error('usage: desktop-side.js --cipher none|aes256-gcm ws://HOST:PORT TARGET_PORT...');
  }
  // Progress on stderr (the benchmark's log of this process): a start that never gets ready says where it stopped.
  console.error('connecting to ' + url);
  const socket = common.wsForStream(new WebSocket(url), opts.cipher);
  // The stream listens from the start (it buffers until the session reads): the environment side sends its SSH
  // version as soon as the WebSocket opens, and when that message arrives with the handshake's answer `ws` emits it
  // on the tick after 'open', before an `await` on 'open' resumes; unheard it was lost and the session never
  // connected (a smoke run's peer hung at "connecting the SSH session" twice in a row at load 2).
  const stream = new ssh.WebSocketStream(socket);
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  const session = new ssh.SshClientSession(common.sessionConfig(opts.cipher));
  const negotiated = common.traceNegotiation(session);
  // Any host key is accepted: a performance peer (see the head of this file).
  session.onAuthenticating((e) => { e.authenticationPromise = Promise.resolve({}); });
  // The session ending (env side gone) ends this process: the benchmark sees it as a dead peer.
  session.onClosed((e) => {
    common.log({ event: 'closed', reason: e.reason, message: e.message });
    process.exit(2);
  });
  console.error('WebSocket open; connecting the SSH session');
  await session.connect(stream);
  console.error('SSH session connected');
  // Without security there is no key exchange and nothing to authenticate (the library refuses to).
  if (opts.cipher !== 'none' && !(await session.authenticate({ username: 'bench' }))) {
    throw new Error('authentication failed');
  }
  const pfs = session.activateService(PortForwardingService);
  console.error('forwarding ' + targets.length + ' ports');
  const ports = [];
  for (const t of targets) {
    const forwarder = await pfs.forwardToRemotePort('127.0.0.1', 0, '127.0.0.1', Number(t));
    ports.push(forwarder.localPort);
  }
  common.ready({ event: 'ready', ports, algorithms: common.algorithms(negotiated), versions: common.versions() });
  common.exitOnSignals(() => socket.terminate());
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

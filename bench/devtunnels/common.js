// What env-side.js and desktop-side.js share: options, the session configuration both sides must agree on, the
// WebSocket adapter and the JSON lines they print (the benchmark reads them: LabProcess waits for event=ready).
'use strict';

const ssh = require('@microsoft/dev-tunnels-ssh');
const { PortForwardingService } = require('@microsoft/dev-tunnels-ssh-tcp');

const CIPHERS = ['none', 'aes256-gcm'];

/** --cipher none|aes256-gcm (required: both sides must agree), then the rest as given. */
function parseArgs(argv) {
  const opts = { cipher: null, rest: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--cipher') {
      opts.cipher = argv[++i];
    } else {
      opts.rest.push(argv[i]);
    }
  }
  if (!CIPHERS.includes(opts.cipher)) {
    throw new Error(`--cipher must be one of ${CIPHERS.join(', ')}`);
  }
  return opts;
}

/**
 * The library's defaults, "fair" to it: `none` is SshSessionConfiguration(false), no key exchange and no
 * cipher (beside our ws://, where the tunnel has no TLS either); `aes256-gcm` is its default secure
 * configuration, which already lists aes256-gcm@openssh.com first (asserted here, so a new version that
 * changes the order fails loudly instead of measuring another cipher).
 */
function sessionConfig(cipher) {
  const config = new ssh.SshSessionConfiguration(cipher !== 'none');
  if (cipher === 'aes256-gcm') {
    const first = config.encryptionAlgorithms[0];
    if (!first || first.name !== 'aes256-gcm@openssh.com') {
      throw new Error(`expected aes256-gcm@openssh.com first, got ${first && first.name}`);
    }
  }
  config.addService(PortForwardingService);
  return config;
}

/**
 * A ws WebSocket ready for the library's WebSocketStream: binaryType 'arraybuffer' (it wraps each message without
 * a copy), and for `none` a send that copies. Why: without cipher and MAC the library hands the stream a slice of
 * its one reused send buffer (SshProtocol.sendMessage), and WebSocketStream.write returns as soon as ws.send does,
 * while ws may still hold that slice queued on a busy socket; the next packet then overwrites it and the other side
 * fails with "Invalid packet length" (seen in figures 5 and 6). NodeStream, its TCP adapter, waits for the write
 * callback instead; with aes256-gcm the packet is a fresh Buffer.concat, so only `none` needs the copy.
 */
function wsForStream(socket, cipher) {
  socket.binaryType = 'arraybuffer';
  if (cipher === 'none') {
    const send = socket.send.bind(socket);
    socket.send = (data, ...rest) => send(Buffer.from(data), ...rest);
  }
  return socket;
}

/**
 * Records what a session negotiates: the library has no public getter for the negotiated algorithm names, but
 * traces one "X negotiation: ... => NAME" line per kind (event 9170); those are kept in `negotiated`. With
 * PEER_TRACE=1 in the environment every trace line also goes to stderr.
 */
function traceNegotiation(session) {
  const negotiated = {};
  session.trace = (level, eventId, msg) => {
    if (eventId === ssh.SshTraceEventIds.algorithmNegotiation) {
      const m = /^(\w+) negotiation: .* => (\S+)$/.exec(msg);
      if (m) {
        negotiated[m[1]] = m[2];
      }
    }
    if (process.env.PEER_TRACE) {
      console.error(`trace ${level} ${eventId} ${msg}`);
    }
  };
  return negotiated;
}

/** The negotiated algorithms in short: without security there is no negotiation (all "none"). */
function algorithms(negotiated) {
  return {
    kex: negotiated.KeyExchange || 'none',
    hostKey: negotiated.PublicKey || 'none',
    cipher: negotiated.ServerEncryption || 'none',
    // The HMAC is negotiated even when the cipher is an AEAD one (aes256-gcm), which then does not use it.
    hmac: negotiated.ServerHmac || 'none',
  };
}

function versions() {
  return {
    node: process.version,
    'dev-tunnels-ssh': require('@microsoft/dev-tunnels-ssh/package.json').version,
    'dev-tunnels-ssh-tcp': require('@microsoft/dev-tunnels-ssh-tcp/package.json').version,
    ws: require('ws/package.json').version,
  };
}

function log(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function ready(obj) {
  log(obj);
}

/**
 * SIGTERM/SIGINT (the benchmark's close) end the process at once. (Not the end of stdin: the runner's LabProcess
 * starts it with stdin at end of file already.)
 */
function exitOnSignals(cleanup) {
  const stop = () => {
    try {
      cleanup();
    } finally {
      process.exit(0);
    }
  };
  for (const sig of ['SIGTERM', 'SIGINT']) {
    process.on(sig, stop);
  }
}

module.exports = {
  parseArgs, sessionConfig, wsForStream, traceNegotiation, algorithms, versions, log, ready, exitOnSignals,
};

// Preloaded (NODE_OPTIONS=--require) into every node process of
// gateway/agents_node_test.go: a connection or a name lookup for any host
// but loopback fails, and is written, one line each, to the file named by
// SLUICE_STRAY_LOG, which the test reads after each run and asserts empty.
// It sits below every client library a node program may use — Node's
// built-in fetch (undici, which ignores HTTP_PROXY on Node 20), http and
// https, net and tls, dns — since each of them opens its connection
// through net.Socket's connect. The agents' native binaries (Claude Code's,
// Codex's) are not node: they honour the refusing proxy the test sets in
// HTTP(S)_PROXY instead.
'use strict';

const fs = require('node:fs');
const net = require('node:net');
const dns = require('node:dns');

const logFile = process.env.SLUICE_STRAY_LOG;

function loopback(host) {
  if (host === undefined || host === null || host === '') return true; // Node's default is localhost
  host = String(host).replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host === '::1' || host.startsWith('127.') || host === '::ffff:127.0.0.1';
}

function stray(what) {
  const line = `${process.pid} ${what}\n`;
  try {
    if (logFile) fs.appendFileSync(logFile, line);
  } catch (_) {
    // The test fails on a missing log line anyway: it counts the lines.
  }
  const err = new Error(`sluice agent tests: no request past loopback (${what})`);
  err.code = 'ECONNREFUSED';
  return err;
}

// net.Socket#connect(options | port[, host] | path[, cb]).
const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  let opts = args[0];
  if (Array.isArray(opts)) opts = opts[0]; // normalized arguments (internal)
  let host;
  let isPath = false;
  if (opts !== null && typeof opts === 'object') {
    host = opts.host;
    isPath = typeof opts.path === 'string';
  } else if (typeof opts === 'string' && !/^\d+$/.test(opts)) {
    isPath = true; // a unix socket's path
  } else if (typeof args[1] === 'string') {
    host = args[1];
  }
  if (!isPath && !loopback(host)) {
    const err = stray(`connect ${host}`);
    process.nextTick(() => this.destroy(err));
    return this;
  }
  return connect.apply(this, args);
};

// Name lookups of other hosts (a client resolving before it connects).
const lookup = dns.lookup;
dns.lookup = function (host, ...rest) {
  if (!loopback(host)) {
    const cb = rest[rest.length - 1];
    const err = stray(`lookup ${host}`);
    err.code = 'ENOTFOUND';
    if (typeof cb === 'function') process.nextTick(() => cb(err));
    return {};
  }
  return lookup.call(this, host, ...rest);
};
const plookup = dns.promises.lookup;
dns.promises.lookup = function (host, ...rest) {
  if (!loopback(host)) {
    const err = stray(`lookup ${host}`);
    err.code = 'ENOTFOUND';
    return Promise.reject(err);
  }
  return plookup.call(this, host, ...rest);
};

// fetch before it reaches a socket (it would be caught there too).
if (typeof globalThis.fetch === 'function') {
  const fetch = globalThis.fetch;
  globalThis.fetch = function (input, init) {
    let host;
    try {
      host = new URL(typeof input === 'string' || input instanceof URL ? input : input.url).hostname;
    } catch (_) {
      return fetch.call(this, input, init);
    }
    if (!loopback(host)) return Promise.reject(stray(`fetch ${host}`));
    return fetch.call(this, input, init);
  };
}

// Preloaded with `node --import` before the third-party gateway's own start
// script, which listens on every interface: this binds every server socket it
// opens to 127.0.0.1 instead, so the benchmark never listens beyond loopback.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (first !== null && typeof first === 'object') {
    args[0] = { ...first, host: '127.0.0.1' };
  } else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    // listen(port[, host][, backlog][, callback])
    if (typeof args[1] === 'string' || args[1] === undefined) {
      args[1] = '127.0.0.1';
    } else {
      args.splice(1, 0, '127.0.0.1');
    }
  }
  return listen.apply(this, args);
};

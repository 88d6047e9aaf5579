// A JSON-RPC 2.0 client over one WebSocket that reconnects by itself
// (PROTOCOL.md 1).
//
// Calls are sent at once and answered in order by the server (it handles a
// connection's calls one at a time), so a caller may pipeline: send an edit
// and the save that depends on it without waiting. A call made while the
// socket is not open fails at once with code DISCONNECTED rather than
// waiting, so the page never acts on a stale intention after a reconnect.
// When the socket closes, every call still waiting fails with DISCONNECTED.

export const DISCONNECTED = "disconnected";

// RpcError is a JSON-RPC error reply (code is the protocol's number) or a
// DISCONNECTED failure.
export class RpcError extends Error {
  constructor(method, code, message, data) {
    super(`${method}: ${message}`);
    this.method = method;
    this.code = code;
    this.data = data;
  }
}

const MIN_DELAY = 250; // ms before the first reconnect attempt
const MAX_DELAY = 5000; // ms between attempts at most

export class Rpc {
  // url: the ws:// URL, token included. handlers:
  //   open()         called on every (re)connect, before any notification
  //                  of that connection is delivered; may return a promise.
  //   notify(method, params)
  //   state(name, info)  name: "connecting", "open", "reconnecting",
  //                  info {attempt, delay, code, reason}.
  constructor(url, handlers) {
    this.url = url;
    this.handlers = handlers;
    this.ws = null; // the current socket, null between connections
    this.nextId = 1;
    this.waiting = new Map(); // id -> {method, resolve, reject}
    this.attempt = 0; // failed connects since the last open
    this.timer = null; // pending reconnect
    this.stopped = false;
  }

  start() {
    this.stopped = false;
    this.connect();
  }

  // reconnectNow skips the wait before the next attempt.
  reconnectNow() {
    if (this.ws || this.stopped) return;
    clearTimeout(this.timer);
    this.connect();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.ws) this.ws.close(1000, "page closed");
  }

  get connected() {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN;
  }

  connect() {
    this.handlers.state(this.attempt === 0 ? "connecting" : "reconnecting", { attempt: this.attempt });
    const ws = new WebSocket(this.url);
    this.ws = ws;
    let opened = false;
    // Notifications that arrive while open() runs are held back, so the
    // page sees a connection's notifications after it has set it up.
    let held = [];
    ws.onopen = async () => {
      opened = true;
      this.attempt = 0;
      try {
        await this.handlers.open();
      } catch (err) {
        console.error("ripple: connection set-up failed", err);
      }
      const queue = held;
      held = null;
      for (const msg of queue) this.dispatch(msg);
      if (this.ws === ws && ws.readyState === WebSocket.OPEN) this.handlers.state("open", {});
    };
    ws.onmessage = (ev) => {
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch (err) {
        console.error("ripple: a message that is not JSON", ev.data);
        return;
      }
      for (const m of Array.isArray(msg) ? msg : [msg]) {
        if (m.id !== undefined && m.method === undefined) this.reply(m);
        else if (held) held.push(m);
        else this.dispatch(m);
      }
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      for (const [, w] of this.waiting) {
        w.reject(new RpcError(w.method, DISCONNECTED, "the connection closed"));
      }
      this.waiting.clear();
      if (this.stopped) return;
      if (!opened) this.attempt++;
      const delay = Math.min(MAX_DELAY, MIN_DELAY * 2 ** Math.min(this.attempt, 5));
      this.handlers.state("reconnecting", { attempt: this.attempt, delay, code: ev.code, reason: ev.reason });
      this.timer = setTimeout(() => this.connect(), delay);
    };
  }

  reply(m) {
    const w = this.waiting.get(m.id);
    if (!w) return;
    this.waiting.delete(m.id);
    if (m.error) w.reject(new RpcError(w.method, m.error.code, m.error.message, m.error.data));
    else w.resolve(m.result);
  }

  dispatch(m) {
    if (typeof m.method !== "string") return;
    try {
      this.handlers.notify(m.method, m.params || {});
    } catch (err) {
      console.error(`ripple: handling ${m.method}`, err);
    }
  }

  // call sends a request and resolves with its result.
  call(method, params) {
    if (!this.connected) {
      return Promise.reject(new RpcError(method, DISCONNECTED, "not connected"));
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { method, resolve, reject });
      this.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  }
}

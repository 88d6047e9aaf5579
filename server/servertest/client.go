package servertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/ripple-run/ripple/protocol"
)

// Client is a real WebSocket client of ripple's protocol (gorilla/websocket),
// for tests and benchmarks. Call sends a request and waits for its reply;
// everything else the server sends (notifications, replies to raw
// messages, batch replies) is kept in order and read with Next or WaitFor.
// A reader goroutine runs until Close or the connection ends.
type Client struct {
	ws   *websocket.Conn
	done chan struct{} // closed when the reader exits

	writeMu sync.Mutex // gorilla allows one writer

	mu      sync.Mutex
	nextID  int64                                  // guarded by mu
	pending map[string]chan protocol.ServerMessage // guarded by mu: id text -> waiter
	stream  []Message                              // guarded by mu: unread messages not claimed by Call
	arrived chan struct{}                          // guarded by mu: closed and replaced when stream grows
	err     error                                  // guarded by mu: why the reader stopped
}

// Message is one message from the server that no Call claimed. Raw is its
// text; ServerMessage is decoded when it is an object (not a batch array).
type Message struct {
	protocol.ServerMessage
	Raw []byte
	// Received is when the reader goroutine read the message (for
	// latency measurements that must not include the consumer's delay).
	Received time.Time
}

// Dial connects to url (ws://host:port/ws?token=...) with the extra
// header. On a failed handshake the HTTP response is returned with the
// error, so tests can check its status.
func Dial(ctx context.Context, url string, header http.Header) (*Client, *http.Response, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	ws, resp, err := d.DialContext(ctx, url, header)
	if err != nil {
		return nil, resp, err
	}
	c := &Client{
		ws:      ws,
		done:    make(chan struct{}),
		pending: make(map[string]chan protocol.ServerMessage),
		arrived: make(chan struct{}),
	}
	// The handshake response's body is already consumed by gorilla.
	go c.read()
	return c, resp, nil
}

// Conn returns the underlying WebSocket connection, for tests that need
// frames the client does not write itself. Do not read from it.
func (c *Client) Conn() *websocket.Conn { return c.ws }

func (c *Client) read() {
	defer close(c.done)
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			// The connection is over (gorilla has answered a close frame):
			// release the socket so the server is not left waiting.
			_ = c.ws.Close()
			c.mu.Lock()
			c.err = err
			for _, ch := range c.pending {
				close(ch)
			}
			c.pending = map[string]chan protocol.ServerMessage{}
			close(c.arrived)
			c.mu.Unlock()
			return
		}
		m := Message{Raw: data, Received: time.Now()}
		if len(data) > 0 && data[0] == '{' {
			if err := json.Unmarshal(data, &m.ServerMessage); err != nil {
				m.ServerMessage = protocol.ServerMessage{}
			}
		}
		c.mu.Lock()
		if m.ID != nil && !m.IsNotification() {
			if ch, ok := c.pending[string(m.ID)]; ok {
				delete(c.pending, string(m.ID))
				ch <- m.ServerMessage
				c.mu.Unlock()
				continue
			}
		}
		c.stream = append(c.stream, m)
		close(c.arrived)
		c.arrived = make(chan struct{})
		c.mu.Unlock()
	}
}

// Err returns why the connection ended (a *websocket.CloseError when the
// server closed it), nil while it is open.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// CloseCode waits until the connection ends (or ctx is done) and returns
// the close code the server sent, or -1 when it ended without one.
func (c *Client) CloseCode(ctx context.Context) (int, error) {
	select {
	case <-c.done:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	var ce *websocket.CloseError
	if errors.As(c.Err(), &ce) {
		return ce.Code, nil
	}
	return -1, nil
}

// WriteRaw sends data as one text message.
func (c *Client) WriteRaw(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(30 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, data)
}

// Notify sends a notification (a call without id, never answered).
func (c *Client) Notify(method string, params any) error {
	msg, err := protocol.AppendRequest(nil, nil, method, params)
	if err != nil {
		return err
	}
	return c.WriteRaw(msg)
}

// Call sends a request and waits for its reply. An error reply comes back
// as a *protocol.Error; result (a pointer, or nil) receives the result.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return fmt.Errorf("%s: connection closed: %w", method, err)
	}
	c.nextID++
	id := strconv.FormatInt(c.nextID, 10)
	ch := make(chan protocol.ServerMessage, 1)
	c.pending[id] = ch
	c.mu.Unlock()

	msg, err := protocol.AppendRequest(nil, json.RawMessage(id), method, params)
	if err == nil {
		err = c.WriteRaw(msg)
	}
	if err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("%s: send: %w", method, err)
	}
	select {
	case reply, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: connection closed before the reply: %w", method, c.Err())
		}
		if reply.Error != nil {
			return reply.Error
		}
		if result != nil {
			if err := json.Unmarshal(reply.Result, result); err != nil {
				return fmt.Errorf("%s: decode result %s: %w", method, reply.Result, err)
			}
		}
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// Next returns the next message no Call claimed, waiting for one.
func (c *Client) Next(ctx context.Context) (Message, error) {
	return c.WaitFor(ctx, func(Message) bool { return true })
}

// WaitFor returns the first unread message for which match is true; the
// messages before it are consumed too (and returned by nothing).
func (c *Client) WaitFor(ctx context.Context, match func(Message) bool) (Message, error) {
	for {
		c.mu.Lock()
		for i, m := range c.stream {
			if match(m) {
				c.stream = c.stream[i+1:]
				c.mu.Unlock()
				return m, nil
			}
		}
		c.stream = c.stream[:0]
		arrived, err := c.arrived, c.err
		c.mu.Unlock()
		if err != nil {
			return Message{}, fmt.Errorf("connection ended: %w", err)
		}
		select {
		case <-arrived:
		case <-ctx.Done():
			return Message{}, ctx.Err()
		}
	}
}

// Collect returns the unread messages that match, leaving the others.
func (c *Client) Collect(match func(Message) bool) []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	var got []Message
	rest := c.stream[:0]
	for _, m := range c.stream {
		if match(m) {
			got = append(got, m)
		} else {
			rest = append(rest, m)
		}
	}
	c.stream = rest
	return got
}

// Method matches notifications of one method.
func Method(name string) func(Message) bool {
	return func(m Message) bool { return m.IsNotification() && m.Method == name }
}

// Close sends a close frame, waits briefly for the server's answer, closes
// the connection and waits for the reader goroutine. Closing a connection
// the server already closed is fine.
func (c *Client) Close() {
	c.writeMu.Lock()
	err := c.ws.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	c.writeMu.Unlock()
	if err == nil {
		select {
		case <-c.done:
		case <-time.After(2 * time.Second):
		}
	}
	_ = c.ws.Close()
	<-c.done
}

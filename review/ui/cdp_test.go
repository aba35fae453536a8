package ui_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// chrome is a headless Chromium driven over the DevTools protocol: one page,
// attached with a flat session.
type chrome struct {
	t       *testing.T
	ctx     context.Context
	conn    *websocket.Conn
	session string
	nextID  atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan cdpReply
	stderr  *lockedBuffer
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) add(s string) { l.mu.Lock(); l.b.WriteString(s + "\n"); l.mu.Unlock() }
func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// chromiumPath finds the browser; the test fails without it in CI and
// skips locally.
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium is not installed (apt-get install chromium; .ci/run installs it)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (CI is set: the browser test must not be skipped)")
	}
	t.Skip(msg)
	return ""
}

var devtoolsRE = regexp.MustCompile(`DevTools listening on (ws://\S+)`)

// startChrome launches headless Chromium on loopback with a fresh profile
// and attaches to a blank page. Everything stops when the test ends.
func startChrome(t *testing.T, ctx context.Context) *chrome {
	t.Helper()
	bin := chromiumPath(t)
	ctx, cancel := context.WithCancel(ctx)
	// The profile is removed by hand after Chromium's helper processes are
	// gone (t.TempDir's cleanup could race them).
	profile, err := os.MkdirTemp("", "sluice-ui-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
		"--user-data-dir="+profile, "--window-size=1280,900", "about:blank")
	cmd.WaitDelay = 5 * time.Second
	// Its own process group, so that the cleanup ends the helpers too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	c := &chrome{t: t, ctx: ctx, pending: map[int64]chan cdpReply{}, stderr: &lockedBuffer{}}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		// Ask politely, then end the process group this test started.
		if c.conn != nil {
			_ = c.send(true, "Browser.close", nil, nil)
			_ = c.conn.CloseNow()
		}
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		}
		cancel()
		<-exited
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // helpers that outlived the browser
		for range 50 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("could not remove %s", profile)
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			c.stderr.add(line)
			if m := devtoolsRE.FindStringSubmatch(line); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
	}()
	var wsURL string
	select {
	case wsURL = <-found:
	case <-time.After(30 * time.Second):
		t.Fatalf("chromium printed no DevTools address within 30s; stderr:\n%s", c.stderr)
	}
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	defer dcancel()
	conn, _, err := websocket.Dial(dctx, wsURL, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", wsURL, err)
	}
	conn.SetReadLimit(256 << 20) // screenshots arrive as one base64 message
	c.conn = conn
	go c.readLoop()

	var target struct {
		TargetID string `json:"targetId"`
	}
	c.browserCall("Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	c.browserCall("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	c.session = attached.SessionID
	c.call("Page.enable", nil, nil)
	c.call("Runtime.enable", nil, nil)
	c.setViewport(900)
	return c
}

func (c *chrome) readLoop() {
	for {
		_, data, err := c.conn.Read(c.ctx)
		if err != nil {
			c.mu.Lock()
			for id, ch := range c.pending {
				close(ch)
				delete(c.pending, id)
			}
			c.mu.Unlock()
			return
		}
		var msg struct {
			ID int64 `json:"id"`
			cdpReply
		}
		if json.Unmarshal(data, &msg) != nil || msg.ID == 0 {
			continue // an event: the test polls instead
		}
		c.mu.Lock()
		ch := c.pending[msg.ID]
		delete(c.pending, msg.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- msg.cdpReply
		}
	}
}

// send issues one command (on the page session unless browser is set) and
// waits up to 30 s for its reply.
func (c *chrome) send(browser bool, method string, params any, out any) error {
	id := c.nextID.Add(1)
	ch := make(chan cdpReply, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if !browser {
		msg["sessionId"] = c.session
	}
	b, _ := json.Marshal(msg)
	wctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	if err := c.conn.Write(wctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("%s: write: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: connection closed; chromium stderr:\n%s", method, c.stderr)
		}
		if r.Error != nil {
			return fmt.Errorf("%s: %d %s", method, r.Error.Code, r.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s: no reply within 30s", method)
	}
}

func (c *chrome) call(method string, params, out any) {
	c.t.Helper()
	if err := c.send(false, method, params, out); err != nil {
		c.t.Fatal(err)
	}
}

func (c *chrome) browserCall(method string, params, out any) {
	c.t.Helper()
	if err := c.send(true, method, params, out); err != nil {
		c.t.Fatal(err)
	}
}

// eval runs a JavaScript expression in the page and decodes its value.
func (c *chrome) eval(expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := c.send(false, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r); err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("%s: %s %s", expr, r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if out != nil {
		if len(r.Result.Value) == 0 {
			return fmt.Errorf("%s: no value", expr)
		}
		return json.Unmarshal(r.Result.Value, out)
	}
	return nil
}

func (c *chrome) mustEval(expr string, out any) {
	c.t.Helper()
	if err := c.eval(expr, out); err != nil {
		c.t.Fatal(err)
	}
}

// text returns the trimmed text content of the first element matching sel.
func (c *chrome) text(sel string) string {
	c.t.Helper()
	var s string
	c.mustEval(fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? e.textContent.trim() : "<missing " + %q + ">"; })()`, sel, sel), &s)
	return s
}

// count returns how many elements match sel.
func (c *chrome) count(sel string) int {
	c.t.Helper()
	var n int
	c.mustEval(fmt.Sprintf(`document.querySelectorAll(%q).length`, sel), &n)
	return n
}

// waitFor polls a boolean expression every 50 ms, up to 20 s.
func (c *chrome) waitFor(expr string) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		var ok bool
		if last = c.eval(expr, &ok); last == nil && ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("waited 20s for %s (last error: %v)", expr, last)
}

// navigate loads a URL and waits until the document is complete.
func (c *chrome) navigate(url string) {
	c.t.Helper()
	c.call("Page.navigate", map[string]any{"url": url}, nil)
	c.waitLoaded()
}

// markDocument tags the current document, so that waitNavigated can tell
// when another one replaced it.
func (c *chrome) markDocument() { c.mustEval(`window.__uiTestMark = true`, nil) }

func (c *chrome) waitNavigated() {
	c.t.Helper()
	c.waitFor(`window.__uiTestMark === undefined && document.readyState === "complete"`)
}

func (c *chrome) waitLoaded() {
	c.t.Helper()
	c.waitFor(`document.readyState === "complete" && location.href !== "about:blank"`)
}

// click scrolls the element into view and clicks the centre of its first
// box (an inline element that wraps has several) with the mouse.
func (c *chrome) click(sel string) {
	c.t.Helper()
	var pt []float64
	c.mustEval(fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) throw new Error("no element " + %q);
		e.scrollIntoView({block: "center"}); const r = e.getClientRects()[0]; return [r.x + r.width/2, r.y + r.height/2]; })()`, sel, sel), &pt)
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		c.call("Input.dispatchMouseEvent", map[string]any{"type": typ, "x": pt[0], "y": pt[1], "button": "left", "clickCount": 1}, nil)
	}
}

// clickAndWait clicks an element that loads another document.
func (c *chrome) clickAndWait(sel string) {
	c.t.Helper()
	c.markDocument()
	c.click(sel)
	c.waitNavigated()
}

// typeInto clicks a field and types text as keyboard input.
func (c *chrome) typeInto(sel, text string) {
	c.t.Helper()
	c.click(sel)
	c.call("Input.insertText", map[string]any{"text": text}, nil)
}

func (c *chrome) setViewport(height int) {
	c.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
}

// screenshot captures the whole page as PNG.
func (c *chrome) screenshot() []byte {
	c.t.Helper()
	var h int
	c.mustEval(`Math.ceil(document.documentElement.scrollHeight)`, &h)
	c.setViewport(min(max(h, 600), 4000))
	defer c.setViewport(900)
	var r struct {
		Data string `json:"data"`
	}
	c.call("Page.captureScreenshot", map[string]any{"format": "png"}, &r)
	b, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		c.t.Fatal(err)
	}
	if len(b) == 0 {
		c.t.Fatal(errors.New("empty screenshot"))
	}
	return b
}

package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"teleclinic/client"
	"teleclinic/internal/testenv"
)

// TestWebhook_SurvivesKill: a message is committed and its delivery is in
// flight when the server is killed with SIGKILL. The restarted server
// delivers it: nothing acknowledged is lost.
func TestWebhook_SurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "teleclinic")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	db := testenv.DSN(t)

	// The receiver holds the first delivery open (the server dies waiting
	// for it) and acknowledges the rest.
	type got struct{ id, messageID string }
	var mu sync.Mutex
	var deliveries []got
	arrived := make(chan struct{}, 10)
	hold := make(chan struct{})
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			ID   string `json:"id"`
			Data struct {
				MessageID string `json:"message_id"`
			} `json:"data"`
		}
		_ = json.NewDecoder(r.Body).Decode(&ev)
		mu.Lock()
		deliveries = append(deliveries, got{ev.ID, ev.Data.MessageID})
		first := len(deliveries) == 1
		mu.Unlock()
		arrived <- struct{}{}
		if first {
			select {
			case <-hold:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(200)
	}))
	defer rc.Close()
	defer close(hold)

	// start runs serve --demo and returns its base URL and printed credentials.
	start := func() (*exec.Cmd, string, map[string]string) {
		cmd := exec.Command(bin, "serve", "--demo", "--addr", "127.0.0.1:0", "--data-dir", dir, "--database", db,
			"--webhook-timeout", "2s", "--webhook-retry-interval", "1s")
		stdout, _ := cmd.StdoutPipe()
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		creds := map[string]string{}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			for _, k := range []string{"admin token:", "API key:", "API secret:"} {
				if v, ok := strings.CutPrefix(line, k); ok {
					creds[k] = strings.TrimSpace(v)
				}
			}
			if strings.HasPrefix(line, "# 3.") {
				break
			}
		}
		go func() { _, _ = io.Copy(io.Discard, stdout) }()
		addr := make(chan string, 1)
		go func() {
			re := regexp.MustCompile(`base_url=(\S+)`)
			s := bufio.NewScanner(stderr)
			for s.Scan() {
				if m := re.FindStringSubmatch(s.Text()); m != nil {
					addr <- m[1]
				}
			}
		}()
		select {
		case base := <-addr:
			return cmd, base, creds
		case <-time.After(20 * time.Second):
			t.Fatal("the server did not start")
		}
		return nil, "", nil
	}
	// call sends form and returns the answer's data: the members the test
	// reads of a login, an intake, a visit or a message.
	type answer struct {
		ID    string `json:"id"`
		Token struct {
			Token string `json:"token"`
		} `json:"token"`
	}
	call := func(base, method, path string, h map[string]string, form url.Values) answer {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		res, err := testenv.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var body struct {
			Data answer `json:"data"`
		}
		if err := json.Unmarshal(raw, &body); err != nil || res.StatusCode/100 != 2 {
			t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
		}
		return body.Data
	}

	cmd, base, creds := start()
	admin := map[string]string{"X-AccountCode": "demo", "X-ApiToken": creds["admin token:"]}
	call(base, "POST", "/api_v3/account/settings", admin, url.Values{"webhook_url": {rc.URL}})
	sso := call(base, "POST", "/api_v3/users/sso", map[string]string{"X-AccountCode": "demo", "X-ApiKey": creds["API key:"], "X-ApiSecret": creds["API secret:"]},
		url.Values{"first_name": {"Pat"}, "last_name": {"Patient"}, "type": {"200"}, "code": {"demo-patient"}})
	user := map[string]string{"X-ApiToken": sso.Token.Token, "X-AccountCode": "demo"}
	intake := call(base, "POST", "/api_v3/intakes", user, url.Values{"room_code": {"main"}, "reason_for_visit": {"Rash"}})
	visit := call(base, "POST", "/api_v3/visits/add_econsult", user, url.Values{"intake_id": {intake.ID}, "room_code": {"main"}})
	msg := call(base, "POST", "/api/visits/"+visit.ID+"/messages", user, url.Values{"content": {"hello"}})

	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the first attempt never arrived")
	}
	// While the receiver holds the attempt, the delivery shows as being sent.
	req, _ := http.NewRequest("GET", base+"/api_v3/webhooks/deliveries", nil)
	for k, v := range admin {
		req.Header.Set(k, v)
	}
	res, err := testenv.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []client.Delivery `json:"data"`
	}
	_ = json.NewDecoder(res.Body).Decode(&list)
	res.Body.Close()
	if len(list.Data) != 1 || list.Data[0].Outcome != "sending" || list.Data[0].Attempts != 1 || list.Data[0].NextAttempt != nil {
		t.Fatalf("%+v", list.Data)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown, no cleanup
		t.Fatal(err)
	}
	_ = cmd.Wait()

	start()
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the delivery was lost with the killed server")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(deliveries) != 2 || deliveries[1].messageID != msg.ID || deliveries[0].messageID != msg.ID || deliveries[0].id == deliveries[1].id {
		t.Fatalf("%+v", deliveries)
	}
}

package testenv

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/livekit/protocol/auth"

	"teleclinic/internal/media"
)

// LiveKitKey and LiveKitSecret are the API key pair of the LiveKit
// stand-in (and of a LiveKit server started with --dev: devkey/secret is
// its own, too short for production).
const (
	LiveKitKey    = "APIvisits"
	LiveKitSecret = "a-livekit-secret-of-32-characters!"
)

// LiveKitStandIn answers the part of a LiveKit server's API the clinic
// server calls (RoomService.CreateRoom over Twirp, JSON), checking each
// call's token with LiveKit's own protocol/auth as LiveKit would, and
// records the rooms made and the tokens pages present to it. It carries
// no media: a call through it does not connect.
type LiveKitStandIn struct {
	URL string // ws://…, as --livekit-url takes it

	mu     sync.Mutex
	rooms  map[string]RoomRequest
	tokens []string
	fail   bool
}

// RoomRequest is a CreateRoom call as the stand-in received it.
type RoomRequest struct {
	Name             string `json:"name"`
	EmptyTimeout     int    `json:"empty_timeout"`
	DepartureTimeout int    `json:"departure_timeout"`
	MaxParticipants  int    `json:"max_participants"`
}

// NewLiveKitStandIn starts a stand-in, closed when t ends.
func NewLiveKitStandIn(t testing.TB) *LiveKitStandIn {
	s := &LiveKitStandIn{rooms: map[string]RoomRequest{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = "ws" + strings.TrimPrefix(srv.URL, "http")
	return s
}

// Config is the clinic server's setting for the stand-in.
func (s *LiveKitStandIn) Config() media.LiveKit {
	return media.LiveKit{URL: s.URL, Key: LiveKitKey, Secret: LiveKitSecret}
}

// Rooms is the rooms made so far, by name.
func (s *LiveKitStandIn) Rooms() map[string]RoomRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]RoomRequest, len(s.rooms))
	for k, v := range s.rooms {
		out[k] = v
	}
	return out
}

// Tokens is the access tokens pages presented (the signalling connection).
func (s *LiveKitStandIn) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tokens...)
}

// Fail makes the API answer 503, as a LiveKit server that is down.
func (s *LiveKitStandIn) Fail(on bool) { s.mu.Lock(); s.fail = on; s.mu.Unlock() }

func (s *LiveKitStandIn) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.URL.Path != "/twirp/livekit.RoomService/CreateRoom" {
		// A page's signalling connection: record its token, refuse it.
		tok := r.URL.Query().Get("access_token")
		if tok == "" {
			tok = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		if tok != "" {
			s.tokens = append(s.tokens, tok)
		}
		http.Error(w, "not a LiveKit server", http.StatusUnauthorized)
		return
	}
	if s.fail {
		http.Error(w, `{"code":"unavailable","msg":"down"}`, http.StatusServiceUnavailable)
		return
	}
	parsed, err := auth.ParseAPIToken(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	if err != nil || parsed.APIKey() != LiveKitKey {
		http.Error(w, `{"code":"unauthenticated"}`, http.StatusUnauthorized)
		return
	}
	_, grants, err := parsed.Verify(LiveKitSecret)
	if err != nil || grants.Video == nil || !grants.Video.RoomCreate {
		http.Error(w, `{"code":"permission_denied"}`, http.StatusForbidden)
		return
	}
	var req RoomRequest
	if r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Name == "" {
		http.Error(w, `{"code":"malformed"}`, http.StatusBadRequest)
		return
	}
	s.rooms[req.Name] = req
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"sid": "RM_" + req.Name, "name": req.Name, "empty_timeout": req.EmptyTimeout, "max_participants": req.MaxParticipants})
}

// EnvLiveKitServer names the variable holding the path of a livekit-server
// binary (.ci/run builds v1.13.5 from its module); without it the tests
// that need a running LiveKit server skip, saying so.
const EnvLiveKitServer = "TELECLINIC_LIVEKIT_SERVER"

// liveKitServerKey/Secret are the key pair a started LiveKit server takes.
const (
	liveKitServerKey    = "devkey"
	liveKitServerSecret = "a-livekit-dev-secret-of-32-chars!!"
)

// LiveKitServer is a running LiveKit server, stopped when its test ends.
type LiveKitServer struct {
	media.LiveKit
	Log *SyncBuffer // its log, for a failing test's message
	Pid int         // its process, for its CPU and memory (/proc)
}

// FreePort is a TCP port of 127.0.0.1 nothing listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// StartLiveKit starts the LiveKit server at $TELECLINIC_LIVEKIT_SERVER on
// free ports of 127.0.0.1, reporting its rooms to the webhook of the
// clinic server at serverURL, and waits until it answers. It skips t when
// the variable is unset.
func StartLiveKit(t testing.TB, serverURL string) *LiveKitServer {
	t.Helper()
	bin := os.Getenv(EnvLiveKitServer)
	if bin == "" {
		t.Skip("no LiveKit server: set " + EnvLiveKitServer + " to a livekit-server binary (.ci/run builds one)")
	}
	port, webhookURL := FreePort(t), serverURL+"/api_v3/livekit/webhook"
	udp := FreePort(t) // a TCP port free now; its UDP twin is most likely free too
	config := fmt.Sprintf(`port: %d
bind_addresses: ["127.0.0.1"]
rtc:
  tcp_port: %d
  udp_port: %d
  use_external_ip: false
  node_ip: 127.0.0.1
keys:
  %s: %s
webhook:
  api_key: %s
  urls: [%q]
logging:
  level: info
`, port, FreePort(t), udp, liveKitServerKey, liveKitServerSecret, liveKitServerKey, webhookURL)
	logs := &SyncBuffer{}
	cmd := exec.Command(bin, "--config-body", config)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("livekit-server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		res, err := http.Get(base + "/")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(end) {
			t.Fatalf("livekit-server did not answer within 20 s:\n%s", logs.String())
		}
	}
	return &LiveKitServer{LiveKit: media.LiveKit{URL: fmt.Sprintf("ws://127.0.0.1:%d", port), Key: liveKitServerKey, Secret: liveKitServerSecret}, Log: logs, Pid: cmd.Process.Pid}
}

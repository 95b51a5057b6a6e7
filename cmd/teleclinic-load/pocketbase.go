package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// pocketBase is a PocketBase server (--pocketbase-bin, a build of its
// public source), set up as the one-binary backend a clinic might pick
// instead: an auth collection of users, a visits collection whose
// records belong to a user, and a messages collection whose create rule
// is "a participant posts to the visit's thread". It is the pb-post
// scenario's baseline: the same closed loop of authenticated creates, so
// the ratio column is Teleclinic's post over PocketBase's create, measured
// in alternating rounds with --rounds.
type pocketBase struct {
	cmd  *exec.Cmd
	url  string
	log  *syncBuffer
	once sync.Once
	// posters are the users' tokens and their visits' ids.
	posters []pbPoster
}

type pbPoster struct{ token, visit string }

const (
	pbAdmin    = "admin@load.example.com"
	pbPassword = "load-password-1234"
)

// startPocketBase runs bin on a data dir of its own, makes its superuser,
// the two collections and n users with a visit each.
func startPocketBase(ctx context.Context, bin, tmp string, n int) (*pocketBase, error) {
	dir := filepath.Join(tmp, "pocketbase")
	up := exec.CommandContext(ctx, bin, "superuser", "upsert", pbAdmin, pbPassword, "--dir", dir)
	if out, err := up.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pocketbase superuser: %w: %s", err, out)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	sb := &syncBuffer{}
	cmd := exec.Command(bin, "serve", "--http", addr, "--dir", dir)
	cmd.Stdout, cmd.Stderr = sb, sb
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pb := &pocketBase{cmd: cmd, url: "http://" + addr, log: sb}
	if err := waitHTTP(ctx, pb.url+"/api/health"); err != nil {
		pb.stop()
		return nil, fmt.Errorf("pocketbase: %w; output:\n%s", err, sb.b.String())
	}
	if err := pb.setUp(ctx, n); err != nil {
		pb.stop()
		return nil, fmt.Errorf("pocketbase set-up: %w", err)
	}
	return pb, nil
}

func (pb *pocketBase) stop() {
	pb.once.Do(func() {
		_ = pb.cmd.Process.Kill()
		_ = pb.cmd.Wait()
	})
}

// call sends v as JSON and decodes the answer's object.
func (pb *pocketBase) call(ctx context.Context, method, path, token string, v any) (map[string]any, error) {
	b, _ := json.Marshal(v)
	req, err := http.NewRequestWithContext(ctx, method, pb.url+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, body)
	}
	var out map[string]any
	return out, json.Unmarshal(body, &out)
}

func (pb *pocketBase) setUp(ctx context.Context, n int) error {
	auth, err := pb.call(ctx, "POST", "/api/collections/_superusers/auth-with-password", "", map[string]string{"identity": pbAdmin, "password": pbPassword})
	if err != nil {
		return err
	}
	admin, _ := auth["token"].(string)
	visits, err := pb.call(ctx, "POST", "/api/collections", admin, map[string]any{
		"name": "visits", "type": "base",
		"fields":   []map[string]any{{"name": "member", "type": "relation", "collectionId": "_pb_users_auth_", "maxSelect": 1, "required": true}},
		"listRule": "member = @request.auth.id", "viewRule": "member = @request.auth.id",
	})
	if err != nil {
		return err
	}
	if _, err := pb.call(ctx, "POST", "/api/collections", admin, map[string]any{
		"name": "messages", "type": "base",
		"fields": []map[string]any{
			{"name": "visit", "type": "relation", "collectionId": visits["id"], "maxSelect": 1, "required": true},
			{"name": "content", "type": "text", "required": true, "max": 10000},
			{"name": "created", "type": "autodate", "onCreate": true},
		},
		"createRule": `@request.auth.id != "" && visit.member = @request.auth.id`,
		"listRule":   "visit.member = @request.auth.id", "viewRule": "visit.member = @request.auth.id",
	}); err != nil {
		return err
	}
	for i := range n {
		email := fmt.Sprintf("patient%d@load.example.com", i)
		u, err := pb.call(ctx, "POST", "/api/collections/users/records", "", map[string]string{"email": email, "password": pbPassword, "passwordConfirm": pbPassword})
		if err != nil {
			return err
		}
		v, err := pb.call(ctx, "POST", "/api/collections/visits/records", admin, map[string]any{"member": u["id"]})
		if err != nil {
			return err
		}
		a, err := pb.call(ctx, "POST", "/api/collections/users/auth-with-password", "", map[string]string{"identity": email, "password": pbPassword})
		if err != nil {
			return err
		}
		tok, _ := a["token"].(string)
		vid, _ := v["id"].(string)
		pb.posters = append(pb.posters, pbPoster{token: tok, visit: vid})
	}
	// The rule holds: another user's visit is refused.
	if len(pb.posters) > 1 {
		_, err := pb.call(ctx, "POST", "/api/collections/messages/records", pb.posters[0].token, map[string]string{"visit": pb.posters[1].visit, "content": "not mine"})
		if err == nil || !strings.Contains(err.Error(), ": 400 ") {
			return fmt.Errorf("a post to another user's visit: %v, want a 400", err)
		}
	}
	return nil
}

// post is the request of worker w: its user's message to their visit.
func (pb *pocketBase) post(w, _ int) (*http.Request, error) {
	p := pb.posters[w%len(pb.posters)]
	body, _ := json.Marshal(map[string]string{"visit": p.visit, "content": "Hello from the load tool."})
	req, err := http.NewRequest("POST", pb.url+"/api/collections/messages/records", bytes.NewReader(body))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", p.token)
	}
	return req, err
}

// peakRSS is the PocketBase process's peak RSS in MB.
func (pb *pocketBase) peakRSS() float64 {
	_, peak := procRSS(pb.cmd.Process.Pid)
	return peak
}

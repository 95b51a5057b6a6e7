package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	_ "modernc.org/sqlite"
)

// serveBaseline is the tool's baseline mode: the least a Go HTTP server can
// do per request, as the yardstick for the real server's figures.
//
//   - kind json: GET /json answers a small JSON object.
//   - kind sqlite: POST /insert inserts one row (WAL, synchronous NORMAL, one
//     writer connection, as the server's SQLite settings) and answers its id;
//     GET /read?id=N reads one row by primary key from a pool of readers.
func serveBaseline(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("baseline", flag.ContinueOnError)
	kind := fs.String("kind", "json", "json or sqlite")
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	dir := fs.String("dir", os.TempDir(), "directory of the SQLite file")
	rows := fs.Int("rows", 10000, "rows to seed for point reads")
	if err := fs.Parse(args); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	switch *kind {
	case "json":
		mux.HandleFunc("GET /json", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"id": "1", "code": "main", "name": "Main Room", "active": true}})
		})
	case "sqlite":
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			return err
		}
		dsn := "file:" + filepath.Join(*dir, "baseline.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
		wdb, err := sql.Open("sqlite", dsn)
		if err != nil {
			return err
		}
		wdb.SetMaxOpenConns(1)
		rdb, err := sql.Open("sqlite", dsn+"&_pragma=query_only(1)")
		if err != nil {
			return err
		}
		rdb.SetMaxOpenConns(4)
		rdb.SetMaxIdleConns(4)
		if _, err := wdb.Exec(`CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, visit_id INTEGER NOT NULL, content TEXT NOT NULL, created INTEGER NOT NULL)`); err != nil {
			return err
		}
		tx, err := wdb.Begin()
		if err != nil {
			return err
		}
		for i := range *rows {
			if _, err := tx.Exec("INSERT INTO messages (visit_id, content, created) VALUES (?, ?, ?)", i%64, "Seeded message.", time.Now().UnixMicro()); err != nil {
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		mux.HandleFunc("POST /insert", func(w http.ResponseWriter, r *http.Request) {
			visit, _ := strconv.ParseInt(r.FormValue("visit_id"), 10, 64)
			// Exec, not INSERT … RETURNING through QueryRow: SQLite runs its
			// automatic checkpoint only when a statement that commits is
			// stepped to its end, and a RETURNING row read and then closed
			// commits on reset instead, so the baseline never checkpointed
			// and its WAL grew without bound (354 MB in 8 s), work the
			// server's writer does and no server could skip.
			res, err := wdb.ExecContext(r.Context(), "INSERT INTO messages (visit_id, content, created) VALUES (?, ?, ?)",
				visit, r.FormValue("content"), time.Now().UnixMicro())
			var id int64
			if err == nil {
				id, err = res.LastInsertId()
			}
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"id": strconv.FormatInt(id, 10)}})
		})
		mux.HandleFunc("GET /read", func(w http.ResponseWriter, r *http.Request) {
			var id, visit, created int64
			var content string
			err := rdb.QueryRowContext(r.Context(), "SELECT id, visit_id, content, created FROM messages WHERE id = ?", r.FormValue("id")).Scan(&id, &visit, &content, &created)
			if err != nil {
				http.Error(w, err.Error(), 404)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"id": strconv.FormatInt(id, 10), "visit_id": visit, "content": content, "created": created}})
		})
	default:
		return fmt.Errorf("unknown kind %q", *kind)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.Serve(ln); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

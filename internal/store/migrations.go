package store

import "embed"

// migrationsFS holds one folder of goose migrations per engine. The two
// folders differ only where the engines must: identity columns.
//
//go:embed migrations
var migrationsFS embed.FS

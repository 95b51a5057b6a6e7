package store

import (
	"slices"
	"testing"
)

// TestMessages_TemplateAndInList: a template's SQL expression has one text argument
// per part and the id expressions between them; an empty IN list is FALSE
// rather than the invalid IN ().
func TestMessages_TemplateAndInList(t *testing.T) {
	tpl := Template{`{"a":`, `,"b":`, `}`}
	if got := tpl.Fill(7, 8); got != `{"a":7,"b":8}` {
		t.Fatalf("fill: %s", got)
	}
	expr, args := tpl.sql("e.id", "n.id")
	if expr != "?::text || e.id::text || ?::text || n.id::text || ?::text" || !slices.Equal(args, []any{`{"a":`, `,"b":`, `}`}) {
		t.Fatalf("sql: %s %v", expr, args)
	}
	if got := inList("status", 2); got != "status IN (?, ?)" {
		t.Fatal(got)
	}
	if got := inList("status", 0); got != "FALSE" {
		t.Fatal(got)
	}
}

package clinic

// Page is one page of a list, in the list's order: its items, and Next,
// the cursor a request for the page after it names (for the lists by id,
// the id of this page's last item), 0 when this page is the last.
//
// Every list is read with one row more than its page holds (PageOf): the
// extra row says whether another page follows, so an exactly full last
// page has no next, where guessing from a full page linked to an empty
// one. The API writes Next as its Link rel="next" (httpapi's nextLink),
// the portal as its pager's Earlier/More link.
type Page[T any] struct {
	Items []T
	Next  int64
}

// PageOf is the page of size items that rows (read with a limit of
// size+1) begin; key is an item's cursor.
func PageOf[T any](rows []T, size int, key func(T) int64) Page[T] {
	if len(rows) <= size {
		if rows == nil {
			rows = []T{}
		}
		return Page[T]{Items: rows}
	}
	rows = rows[:size]
	return Page[T]{Items: rows, Next: key(rows[size-1])}
}

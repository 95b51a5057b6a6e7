package store

import "strconv"

func i64s(n int64) string { return strconv.FormatInt(n, 10) }

// nullID stores an optional numeric id kept as a string in the domain types.
func nullID(s string) any {
	if s == "" {
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil
	}
	return n
}

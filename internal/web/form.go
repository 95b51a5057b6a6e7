package web

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"teleclinic/internal/clinic"
)

// fields decodes one request's values (its query, or its posted form) in
// one place. Each accessor reads a field; a value it cannot take is kept
// with why, by the field's name, instead of being dropped: a form's page
// shows each beside its field (Errors), a page's address that names a
// malformed place refuses with all of them (Err). Follows miniflux's
// ui/form: a type per form decodes and validates, the handler acts.
type fields struct {
	vals url.Values
	bad  map[string]string
}

// queryFields are r's query's values.
func queryFields(r *http.Request) *fields {
	return &fields{vals: r.URL.Query(), bad: map[string]string{}}
}

// postFields are r's posted form's values; a body that cannot be read is
// an error of the whole form (the field "").
func postFields(r *http.Request) *fields {
	f := &fields{bad: map[string]string{}}
	if err := r.ParseForm(); err != nil {
		f.bad[""] = "The form could not be read."
	}
	f.vals = r.PostForm
	return f
}

// formFields are r's query and posted form's values together (a form
// posted to an address that carries some of them), parsed already for a
// multipart form.
func formFields(r *http.Request) *fields {
	f := &fields{bad: map[string]string{}}
	if r.Form == nil {
		if err := r.ParseForm(); err != nil {
			f.bad[""] = "The form could not be read."
		}
	}
	f.vals = r.Form
	return f
}

// has says whether the field was sent at all (an empty value counts).
func (f *fields) has(name string) bool { _, ok := f.vals[name]; return ok }

// str is the field's value, trimmed.
func (f *fields) str(name string) string { return strings.TrimSpace(f.vals.Get(name)) }

// place is a list's place, a positive id (a cursor: "after", "before"):
// 0 when absent.
func (f *fields) place(name string) int64 {
	v := f.str(name)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		f.bad[name] = name + " must be the id of an item of the list."
		return 0
	}
	return n
}

// number is a whole number of 0 or more (what says what it is, for
// people: "a time in unix seconds"); 0 when absent.
func (f *fields) number(name, what string) int64 {
	v := f.str(name)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		f.bad[name] = name + " must be " + what + "."
		return 0
	}
	return n
}

// count is a whole number of at least least, def when absent.
func (f *fields) count(name string, least, def int) int {
	v := f.str(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		f.bad[name] = name + " must be a whole number of at least " + strconv.Itoa(least) + "."
		return def
	}
	return n
}

// refuse keeps why the field's value was not taken.
func (f *fields) refuse(name, why string) { f.bad[name] = why }

// Errors are the refused fields' reasons, by field name.
func (f *fields) Errors() map[string]string { return f.bad }

// Err is nil when every field was taken, else an invalid-input error
// naming each refused field's reason, in the fields' order.
func (f *fields) Err() error {
	if len(f.bad) == 0 {
		return nil
	}
	names := make([]string, 0, len(f.bad))
	for n := range f.bad {
		names = append(names, n)
	}
	sort.Strings(names)
	why := make([]string, len(names))
	for i, n := range names {
		why[i] = f.bad[n]
	}
	return clinic.Errorf(clinic.EInvalid, "%s", strings.Join(why, " "))
}

// pager is one list's page links, as every portal list shows them under
// itself (the template block "pager"): back (to the list's first page, or
// the page before) when this is not the first, and on to the next page
// when there is one. Label names the list for screen readers; the texts
// are drawn in the page's language.
type pager struct {
	Label              string
	Back, Next         string // the links' addresses, "" for none
	BackText, NextText string
}

// tr marks a text that a page draws later through its t (a pager's, on
// a translated page), so that the catalogs hold it.
func tr(text string) string { return text }

// on sets the pager's links for a list at path (its anchor on the page
// after #) paged by the parameter param: Back to the first page when
// this page is past the first (paged), Next from the page's cursor
// (clinic.Page's Next, 0 for none). keep are the other parameters both
// links carry.
func (pg pager) on(path, anchor, param string, paged bool, next int64, keep url.Values) pager {
	link := func(cursor int64) string {
		q := url.Values{}
		for k, v := range keep {
			q[k] = v
		}
		if cursor != 0 {
			q.Set(param, strconv.FormatInt(cursor, 10))
		}
		u := path
		if len(q) > 0 {
			u += "?" + q.Encode()
		}
		if anchor != "" {
			u += "#" + anchor
		}
		return u
	}
	if paged {
		pg.Back = link(0)
	}
	if next != 0 {
		pg.Next = link(next)
	}
	return pg
}

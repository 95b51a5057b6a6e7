// Package locale holds the portal's languages: one message catalog per
// language, in a JSON file named by its BCP 47 tag (en.json, es.json),
// read into golang.org/x/text/message. The embedded catalogs are English
// and Spanish; a clinic adds a language, or rewords one, with a file of its
// own in a directory (teleclinic --locale-dir), without code.
//
// A message's key is its English text (as gettext does), so a page's
// template reads as the English page; en.json holds every key, and a new
// language starts as a copy of it.
package locale

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/message/catalog"
)

//go:embed catalogs/*.json
var embedded embed.FS

// File is a catalog file's content.
type File struct {
	// Language is the language's own name ("Español"), as the language
	// switch shows it.
	Language string `json:"language"`
	// Dates are the language's date formats and names.
	Dates Dates `json:"dates"`
	// Messages maps each English text to this language's text. A text
	// with arguments holds fmt verbs (%s, %d; %[2]s to reorder).
	Messages map[string]string `json:"messages"`
}

// Dates are how a language writes dates. At and Day are patterns of
// {weekday} {wd} (short), {day}, {month} {mon} (short), {year} and {time}
// (24-hour hh:mm).
type Dates struct {
	At            string   `json:"at"`
	Day           string   `json:"day"`
	Weekdays      []string `json:"weekdays"`       // from Sunday
	WeekdaysShort []string `json:"weekdays_short"` // from Sunday
	Months        []string `json:"months"`         // from January
	MonthsShort   []string `json:"months_short"`   // from January
}

// Locale is one language: its printer and dates.
type Locale struct {
	Tag  language.Tag
	Name string
	msgs map[string]string
	p    *message.Printer
	d    Dates
	// h12 writes times of day on the 12-hour clock, as readers in the
	// regions of hour12Regions do (Hour12).
	h12 bool
}

// hour12Regions are the regions whose readers write the time of day on
// the 12-hour clock ("3:30 PM").
var hour12Regions = map[string]bool{"US": true, "CA": true, "AU": true, "NZ": true, "PH": true, "IN": true, "PK": true, "EG": true, "SA": true}

// Hour12 is l writing times of day on the 12-hour clock.
func (l *Locale) Hour12() *Locale {
	c := *l
	c.h12 = true
	return &c
}

// Clock is t's time of day: "15:04", or "3:04 PM" on the 12-hour clock.
func (l *Locale) Clock(t time.Time) string {
	if l.h12 {
		return t.Format("3:04 PM")
	}
	return t.Format("15:04")
}

// ZoneName is zone z as a reader says it: its city's time ("New York
// time", from the IANA name America/New_York), or UTC.
func (l *Locale) ZoneName(z *time.Location) string {
	name := z.String()
	if name == "" || name == "UTC" || name == "Local" || !strings.Contains(name, "/") {
		return "UTC"
	}
	city := strings.ReplaceAll(name[strings.LastIndex(name, "/")+1:], "_", " ")
	return l.T(ZoneTimeKey, city)
}

// ZoneTimeKey is the message of a zone's name ("%s time"), which each
// catalog translates.
const ZoneTimeKey = "%s time"

// T is key's text in this language with args in its verbs; a key the
// catalog lacks is printed as it is (English).
func (l *Locale) T(key string, args ...any) string { return l.p.Sprintf(key, args...) }

// Text is key's text in this language as the catalog holds it (verbs
// unfilled), and whether the catalog has it.
func (l *Locale) Text(key string) (string, bool) { v, ok := l.msgs[key]; return v, ok }

// Messages are the texts of keys, for the pages' scripts (which fill
// their own %s).
func (l *Locale) Messages(keys []string) map[string]string {
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		if v, ok := l.msgs[k]; ok {
			out[k] = v
		}
	}
	return out
}

// At is t as a date and time ("Wed 4 Mar 2026, 09:30").
func (l *Locale) At(t time.Time) string { return l.date(l.d.At, t) }

// Day is t's date in full ("Wednesday 4 March 2026").
func (l *Locale) Day(t time.Time) string { return l.date(l.d.Day, t) }

func (l *Locale) date(pattern string, t time.Time) string {
	return strings.NewReplacer(
		"{weekday}", l.d.Weekdays[t.Weekday()], "{wd}", l.d.WeekdaysShort[t.Weekday()],
		"{day}", fmt.Sprint(t.Day()), "{month}", l.d.Months[t.Month()-1], "{mon}", l.d.MonthsShort[t.Month()-1],
		"{year}", fmt.Sprint(t.Year()), "{time}", l.Clock(t),
	).Replace(pattern)
}

// Set is the languages the portal speaks; the first is the default.
type Set struct {
	all     []*Locale
	matcher language.Matcher
}

// Load reads the embedded catalogs, then dir's (when dir is not empty):
// a file there replaces the embedded one of its language.
func Load(dir string) (*Set, error) {
	files := map[string]File{}
	if err := readDir(embedded, "catalogs", files); err != nil {
		return nil, err
	}
	if dir != "" {
		if err := readDir(os.DirFS(dir), ".", files); err != nil {
			return nil, err
		}
	}
	return build(files)
}

func readDir(fsys fs.FS, dir string, into map[string]File) error {
	names, err := fs.Glob(fsys, filepath.ToSlash(filepath.Join(dir, "*.json")))
	if err != nil {
		return err
	}
	for _, n := range names {
		tag := strings.TrimSuffix(filepath.Base(n), ".json")
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return err
		}
		var f File
		if err := json.Unmarshal(b, &f); err != nil {
			return fmt.Errorf("locale %s: %w", n, err)
		}
		into[tag] = f
	}
	return nil
}

// build makes the set from the files by tag, English first.
func build(files map[string]File) (*Set, error) {
	if _, ok := files["en"]; !ok {
		return nil, fmt.Errorf("locale: no English catalog (en.json)")
	}
	tags := make([]string, 0, len(files))
	for t := range files {
		tags = append(tags, t)
	}
	slices.Sort(tags)
	slices.SortStableFunc(tags, func(a, b string) int {
		switch {
		case a == "en":
			return -1
		case b == "en":
			return 1
		}
		return 0
	})
	b := catalog.NewBuilder(catalog.Fallback(language.English))
	s := &Set{}
	var all []language.Tag
	for _, name := range tags {
		f := files[name]
		tag, err := language.Parse(name)
		if err != nil {
			return nil, fmt.Errorf("locale %s.json: the file's name is not a language tag: %w", name, err)
		}
		if err := f.Dates.check(); err != nil {
			return nil, fmt.Errorf("locale %s.json: %w", name, err)
		}
		if f.Language == "" {
			return nil, fmt.Errorf("locale %s.json: no \"language\" (the language's own name)", name)
		}
		for k, v := range f.Messages {
			if err := b.SetString(tag, k, v); err != nil {
				return nil, fmt.Errorf("locale %s.json: %q: %w", name, k, err)
			}
		}
		all = append(all, tag)
		s.all = append(s.all, &Locale{Tag: tag, Name: f.Language, msgs: f.Messages, d: f.Dates})
	}
	for _, l := range s.all {
		l.p = message.NewPrinter(l.Tag, message.Catalog(b))
	}
	s.matcher = language.NewMatcher(all)
	return s, nil
}

func (d Dates) check() error {
	switch {
	case d.At == "" || d.Day == "":
		return fmt.Errorf("dates: \"at\" and \"day\" are needed")
	case len(d.Weekdays) != 7 || len(d.WeekdaysShort) != 7:
		return fmt.Errorf("dates: 7 weekdays and 7 short weekdays are needed, from Sunday")
	case len(d.Months) != 12 || len(d.MonthsShort) != 12:
		return fmt.Errorf("dates: 12 months and 12 short months are needed")
	}
	return nil
}

// All are the languages, the default first.
func (s *Set) All() []*Locale { return s.all }

// Default is the default language (English).
func (s *Set) Default() *Locale { return s.all[0] }

// Pick is the language for a viewer: the one they chose (a tag, from the
// language switch's cookie) if the set has it, else the best match for
// their browser's Accept-Language, else the default. The browser's
// region decides the clock: a reader whose first tag of that language
// names a 12-hour region (en-US) reads "3:30 PM".
func (s *Set) Pick(chosen, acceptLanguage string) *Locale {
	tags := parseAccept(acceptLanguage)
	l := s.all[0]
	if c := s.Get(chosen); chosen != "" && c != nil {
		l = c
	} else if len(tags) > 0 {
		if _, i, conf := s.matcher.Match(tags...); conf != language.No {
			l = s.all[i]
		}
	}
	base, _ := l.Tag.Base()
	for _, t := range tags {
		if b, _ := t.Base(); b == base {
			if r, conf := t.Region(); conf == language.Exact && hour12Regions[r.String()] {
				return l.Hour12()
			}
			break
		}
	}
	return l
}

// Get is the language of tag exactly, or nil.
func (s *Set) Get(tag string) *Locale {
	for _, l := range s.all {
		if l.Tag.String() == tag {
			return l
		}
	}
	return nil
}

// parseAccept reads an Accept-Language header; a malformed one is as
// none.
func parseAccept(h string) []language.Tag {
	tags, _, err := language.ParseAcceptLanguage(h)
	if err != nil {
		return nil
	}
	return tags
}

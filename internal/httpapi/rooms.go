package httpapi

import "net/http"

// roomListItem is a room as GET /rooms lists it.
type roomListItem struct {
	ID       string `json:"id"`
	Code     string `json:"code"`
	Slug     string `json:"slug"`
	Name     string `json:"name"`
	Domain   string `json:"domain"`
	Created  int64  `json:"created"`
	Modified int64  `json:"modified"`
}

func (s *Server) listRooms(w http.ResponseWriter, r *http.Request, c *call) error {
	page, err := c.params.Int("page", 1)
	if err != nil {
		return err
	}
	limit, err := c.params.Int("limit", 0)
	if err != nil {
		return err
	}
	rooms, total, err := s.app.ListRooms(r.Context(), c.p, int(page), int(limit))
	if err != nil {
		return err
	}
	out := make([]roomListItem, 0, len(rooms))
	for _, rm := range rooms {
		out = append(out, roomListItem{ID: id(rm.ID), Code: rm.Code, Slug: rm.Slug, Name: rm.Name, Domain: rm.Domain, Created: rm.Created, Modified: rm.Modified})
	}
	return okList(w, out, total)
}

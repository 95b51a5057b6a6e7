package web

import (
	"net/http"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

type roomItem struct{ Name, Subtitle string }

type clinicPage struct {
	Name  string
	Rooms []roomItem
}

// clinicHome is /u/{account_code}: the clinic's home with its public
// rooms, as GET /rooms shows them to anyone with the clinic's code.
func (s *Server) clinicHome(w http.ResponseWriter, r *http.Request) error {
	p, err := s.accountPrincipal(r, r.PathValue("account_code"))
	if err != nil {
		return clinic.Errorf(clinic.ENotFound, "No clinic has that address.")
	}
	rooms, err := s.app.ListRooms(r.Context(), p, app.RoomQuery{Limit: app.MaxRoomLimit})
	if err != nil {
		return err
	}
	page := clinicPage{Name: p.Account.Name}
	for _, rm := range rooms.Rooms {
		if !rm.Active || !rm.Settings.PublicAccess {
			continue
		}
		page.Rooms = append(page.Rooms, roomItem{Name: rm.Name, Subtitle: rm.Settings.Subtitle})
	}
	s.render(w, r, http.StatusOK, "clinic", page)
	return nil
}

package web

import "net/http"

// AddPage registers a page handler on a running portal, for the tests of
// the edge around it (a panic, each error code).
func (s *Server) AddPage(pattern string, h func(http.ResponseWriter, *http.Request) error) {
	s.page(pattern, h)
}

// AddCallRoute registers a JSON route of the call, as AddPage a page.
func (s *Server) AddCallRoute(pattern string, h func(http.ResponseWriter, *http.Request) error) {
	s.callRoute(pattern, h)
}

// AdminRoomChoices is how many providers a room's "Add a provider" offers.
const AdminRoomChoices = adminRoomChoices

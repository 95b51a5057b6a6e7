package app

import (
	"context"
	"slices"

	"teleclinic/internal/clinic"
	"teleclinic/internal/media"
)

// CallICEServers are the ICE servers for the caller's part in visit id's
// call, with a TURN credential of their own (the user's svcid, or their
// id, names it in the TURN server's log). Who may have them is who may
// take part: the visit's patient, its provider and its hosts, while the
// visit is open — the participants of its thread.
func (a *App) CallICEServers(ctx context.Context, p *clinic.Principal, id int64) ([]media.ICEServer, error) {
	if err := requireUser(p); err != nil {
		return nil, err
	}
	v, err := a.messageVisit(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if slices.Contains(closedForMessages, v.Status) {
		return nil, clinic.Errorf(clinic.EConflict, "Visit %d is %s; its call has ended.", v.ID, StatusName(v.Status))
	}
	user := p.User.SvcID
	if user == "" {
		user = i64s(p.User.ID)
	}
	servers := a.cfg.ICE.Servers(user, a.now())
	if servers == nil {
		servers = []media.ICEServer{}
	}
	return servers, nil
}

package httpapi

import (
	"net/http"

	"teleclinic/internal/app"
)

// registerRoutes is the API's table of contents. Paths are written without
// the optional .json suffix, which ServeHTTP strips. Every route here is in
// openapi.yaml and the reverse; a test holds both to it.
func (s *Server) registerRoutes() {
	// Users and sessions (spec: Users and sessions).
	s.handle("GET", "/api_v3/users", app.NeedAdmin, famUsers, s.listUsers)
	s.handle("GET", "/api_v3/users/{id}", app.NeedUser, famUsers, s.getUser)
	s.handle("POST", "/api_v3/users/sso", app.NeedAPIKey, famUsers, s.sso)
	// Extension: the admin invites a provider (an activation email).
	s.handle("POST", "/api_v3/users/invite", app.NeedAdmin, famUsers, s.inviteProvider)
	s.handle("GET", "/api_v3/auth", app.NeedNone, famUsers, s.authRedirect)
	s.handle("GET", "/api_v3/me", app.NeedUser, famUsers, s.getMe)
	s.handleUpload("POST", "/api_v3/me", app.NeedUser, famUsers, s.cfg.MaxFileBytes, s.updateMe) // photo may be an upload
	s.handle("POST", "/api_v3/users/logout", app.NeedUser, famUsers, s.logout)
	s.handle("POST", "/api_v3/tokens/refresh", app.NeedAccountCode, famUsers, s.refresh)
	// Extensions the spec names without showing ("not shown").
	s.handle("POST", "/api_v3/users/token/refresh", app.NeedAccountCode, famUsers, s.refresh)
	s.handle("POST", "/api_v3/users/login", app.NeedAccountCode, famUsers, s.login)
	s.handle("POST", "/api_v3/users/activate/request", app.NeedAccountCode, famUsers, s.requestActivation)
	s.handle("POST", "/api_v3/users/activate", app.NeedAccountCode, famUsers, s.activate)
	s.handle("POST", "/api_v3/users/password/reset", app.NeedAccountCode, famUsers, s.requestReset)
	s.handle("POST", "/api_v3/users/password/reset/confirm", app.NeedAccountCode, famUsers, s.confirmReset)

	// Clinic accounts (extensions; docs/compat.md: other endpoints).
	s.handle("GET", "/api_v3/settings", app.NeedAccountCode, famCode, s.settings)
	s.handle("GET", "/api_v3/accounts", app.NeedAccountCode, famCode, s.listAccounts)
	s.handle("GET", "/api_v3/accounts/{code}", app.NeedAccountCode, famCode, s.getAccount)
	s.handle("GET", "/api_v3/audit", app.NeedAdmin, famCode, s.listAudit)
	// Extensions: the audit trail's hash chain, and a user's accounting of
	// the accesses to their record.
	s.handle("GET", "/api_v3/audit/verify", app.NeedAdmin, famCode, s.verifyAudit)
	s.handle("GET", "/api_v3/users/{id}/access-log", app.NeedUser, famCode, s.accessLog)

	// Rooms (spec: Rooms).
	s.handle("GET", "/api_v3/rooms", app.NeedAccountCode, famCode, s.listRooms)
	s.handle("POST", "/api_v3/rooms", app.NeedAdmin, famCode, s.createRoom)
	s.handle("GET", "/api_v3/rooms/{code}", app.NeedAccountCode, famCode, s.getRoom)
	s.handle("GET", "/api_v3/rooms/{code}/providers", app.NeedAccountCode, famCode, s.roomProviders)
	s.handle("GET", "/api_v3/rooms/{code}/providers/{id}", app.NeedAccountCode, famCode, s.roomProvider)
	s.handle("GET", "/api_v3/rooms/{code}/queue", app.NeedAccountOptUser, famCode, s.roomQueue)
	// Extension: the queue's changes as server-sent events.
	s.handle("GET", "/api_v3/rooms/{code}/queue/events", app.NeedUser, famCode, s.roomQueueEvents)
	s.handle("POST", "/api_v3/users/{id}/rooms", app.NeedAdmin, famCode, s.linkRoom)
	s.handle("DELETE", "/api_v3/users/{id}/rooms/{room_code}", app.NeedAdmin, famCode, s.unlinkRoom)
	// Extensions (admin).
	s.handle("PUT", "/api_v3/rooms/{code}", app.NeedAdmin, famCode, s.updateRoom)
	s.handle("DELETE", "/api_v3/rooms/{code}", app.NeedAdmin, famCode, s.deleteRoom)

	// Intakes and visits (spec: Visits, intakes, availability).
	s.handle("POST", "/api_v3/intakes", app.NeedUser, famObject, s.createIntake)
	s.handle("POST", "/api_v3/intakes/{id}", app.NeedUser, famObject, s.updateIntake)
	s.handle("GET", "/api_v3/intakes/{id}", app.NeedUser, famObject, s.getIntake)
	s.handle("POST", "/api_v3/visits/add_walkin", app.NeedUser, famObject, s.addWalkin)
	s.handle("POST", "/api_v3/visits/add_econsult", app.NeedUser, famObject, s.addEconsult)
	s.handle("GET", "/api_v3/visits", app.NeedUser, famObject, s.listVisits)
	s.handle("GET", "/api_v3/visits/{id}", app.NeedUser, famObject, s.getVisit)
	s.handle("POST", "/api_v3/visits", app.NeedUser, famObject, s.book)
	// Extension: a booked visit moved to another time.
	s.handle("POST", "/api_v3/visits/{id}/reschedule", app.NeedUser, famObject, s.reschedule)
	s.handleSlotList("GET", "/api_v3/availability", app.NeedUser, famObject, s.availability)
	// The lifecycle (spec: transitions not shown; docs/compat.md: the forms clients post).
	s.handle("POST", "/api_v3/visits/accept", app.NeedUser, famObject, s.moveVisit(app.ActAccept))
	s.handle("POST", "/api_v3/visits/confirm", app.NeedUser, famObject, s.moveVisit(app.ActConfirm))
	s.handle("POST", "/api_v3/visits/inprogress", app.NeedUser, famObject, s.moveVisit(app.ActInProgress))
	s.handle("POST", "/api_v3/visits/close", app.NeedUser, famObject, s.moveVisit(app.ActClose))
	s.handle("POST", "/api_v3/visits/delete", app.NeedUser, famObject, s.moveVisit(app.ActCancel))

	// Visit notes and the patient's summary (extension).
	s.handle("GET", "/api_v3/visits/{id}/note", app.NeedUser, famObject, s.getNote)
	s.handle("POST", "/api_v3/visits/{id}/note", app.NeedUser, famObject, s.saveNote)
	s.handle("POST", "/api_v3/visits/{id}/note/sign", app.NeedUser, famObject, s.signNote)
	s.handle("POST", "/api_v3/visits/{id}/note/addenda", app.NeedUser, famObject, s.addAddendum)
	s.handle("GET", "/api_v3/visits/{id}/summary", app.NeedUser, famObject, s.getSummary)

	// Recordings (spec: Recordings; storing them and the download link are extensions).
	s.handleUpload("POST", "/api_v3/visits/{id}/recordings", app.NeedAdmin, famObject, s.cfg.MaxUploadBytes, s.addRecording)
	s.handle("GET", "/api_v3/visits/{id}/recordings/{recording_id}", app.NeedAdmin, famObject, s.getRecording)
	s.handle("GET", "/api_v3/recordings/{id}/download", app.NeedNone, famCode, s.downloadRecording)

	// Files (spec: Files).
	s.handleUpload("POST", "/api_v3/files", app.NeedUser, famCode, s.cfg.MaxFileBytes, s.uploadFile)
	s.handle("GET", "/api_v3/files", app.NeedUser, famCode, s.listFiles)
	s.handle("GET", "/api_v3/files/{id}", app.NeedUser, famCode, s.getFile)
	s.handle("POST", "/api_v3/files/{id}", app.NeedUser, famCode, s.updateFile)
	s.handle("DELETE", "/api_v3/files/{id}", app.NeedUser, famCode, s.deleteFile)
	// The link itself is the credential: images load in <img> tags, which send no headers.
	s.handle("GET", "/api_v3/files/view/{id}", app.NeedNone, famCode, s.viewFile)

	// Medical records (spec: EMR; the schema is an extension).
	s.handle("GET", "/api_v3/users/{id}/emr", app.NeedUser, famCode, s.getEMR)
	s.handle("POST", "/api_v3/users/{id}/emr/{name}", app.NeedUser, famCode, s.putEMR)
	s.handle("GET", "/api_v3/emr/schema", app.NeedAccountCode, famCode, s.emrSchema)

	// Health devices (spec: Health devices; the two reads are extensions).
	s.handle("POST", "/api_v3/users/{user_id}/devices", app.NeedUser, famCode, s.registerDevice)
	s.handle("GET", "/api_v3/users/{user_id}/devices", app.NeedUser, famCode, s.listDevices)
	s.handle("POST", "/api_v3/health", app.NeedUser, famCode, s.addReading)
	s.handle("GET", "/api_v3/users/{user_id}/health", app.NeedUser, famCode, s.listReadings)

	// Insurance (spec: Insurance; visit codes are an extension).
	s.handle("GET", "/api_v3/users/{user_id}/insurances", app.NeedUser, famCode, s.listCards)
	s.handle("POST", "/api_v3/users/{user_id}/insurances/import", app.NeedUser, famCode, s.importCards)
	s.handle("POST", "/api_v3/users/{user_id}/insurances/{card_type}", app.NeedUser, famCode, s.saveCard)
	s.handle("GET", "/api_v3/users/{user_id}/insurances/{card_type}", app.NeedUser, famCode, s.getCard)
	s.handle("DELETE", "/api_v3/users/{user_id}/insurances/{card_type}", app.NeedUser, famCode, s.deleteCard)
	s.handle("POST", "/api_v3/users/{user_id}/insurances/primary/eligibility/check", app.NeedUser, famCode, s.checkEligibility)
	s.handle("GET", "/api_v3/users/{user_id}/insurances/primary/eligibility", app.NeedUser, famCode, s.getEligibility)
	s.handle("GET", "/api_v3/reports/claims", app.NeedUser, famCode, s.claimsReport)
	s.handle("GET", "/api_v3/reports/numbers", app.NeedAdmin, famCode, s.clinicNumbers)
	s.handle("GET", "/api_v3/insurances/list/carriers", app.NeedUser, famCode, s.listCarriers)
	s.handle("GET", "/api_v3/insurances/list/insurers", app.NeedUser, famCode, s.listInsurers)
	s.handle("GET", "/api_v3/insurances/list/billing_modifiers", app.NeedUser, famCode, s.listModifiers)
	s.handle("GET", "/api_v3/insurances/list/dxs", app.NeedUser, famCode, s.listDiagnoses)
	s.handle("GET", "/api_v3/insurances/list/procedures", app.NeedUser, famCode, s.listProcedures)
	s.handle("POST", "/api_v3/visits/{id}/codes", app.NeedUser, famObject, s.setVisitCodes)
	s.handle("GET", "/api_v3/visits/{id}/codes", app.NeedUser, famObject, s.getVisitCodes)
	s.handle("POST", "/api_v3/visits/{id}/location", app.NeedUser, famObject, s.checkIn)
	s.handle("GET", "/api_v3/visits/{id}/facts", app.NeedUser, famObject, s.visitFacts)
	s.handle("GET", "/api_v3/visits/{id}/superbill", app.NeedUser, famObject, s.superbillPDF)

	// Pharmacy and prescriptions (spec; writing and discontinuing are extensions).
	s.handle("GET", "/api_v3/users/{id}/erx/prescriptions", app.NeedUser, famCode, s.listPrescriptions)
	s.handle("POST", "/api_v3/users/{id}/erx/prescriptions", app.NeedUser, famCode, s.prescribe)
	s.handle("POST", "/api_v3/users/{id}/erx/prescriptions/{rx_id}/discontinue", app.NeedUser, famCode, s.discontinue)
	s.handle("GET", "/api_v3/users/{id}/erx/pharmacies", app.NeedUser, famCode, s.listPharmacies)
	s.handle("POST", "/api_v3/users/{id}/erx/pharmacies", app.NeedUser, famCode, s.savePharmacy)
	s.handle("DELETE", "/api_v3/users/{id}/erx/pharmacies/{code}", app.NeedUser, famCode, s.deletePharmacy)

	// Payments (spec: Payments; the processor, coupons, the invoice list and
	// refunds are extensions for the clinic admin).
	s.handle("GET", "/api_v3/billing/settings", app.NeedUser, famCode, s.billingSettings)
	s.handle("GET", "/api_v3/billing/processor", app.NeedAdmin, famCode, s.getProcessor)
	s.handle("POST", "/api_v3/billing/processor", app.NeedAdmin, famCode, s.setProcessor)
	s.handle("GET", "/api_v3/billing/sources", app.NeedUser, famCode, s.listSources)
	s.handle("POST", "/api_v3/billing/sources", app.NeedUser, famCode, s.addSource)
	s.handle("GET", "/api_v3/billing/sources/{id}", app.NeedUser, famCode, s.getSource)
	s.handle("PUT", "/api_v3/billing/sources/{id}", app.NeedUser, famCode, s.updateSource)
	s.handle("DELETE", "/api_v3/billing/sources/{id}", app.NeedUser, famCode, s.deleteSource)
	s.handle("POST", "/api_v3/billing/invoices/process", app.NeedUser, famCode, s.processInvoice)
	s.handle("GET", "/api_v3/billing/invoices", app.NeedUser, famCode, s.listInvoices)
	s.handle("POST", "/api_v3/billing/invoices/{id}/refund", app.NeedAdmin, famCode, s.refundInvoice)
	s.handle("POST", "/api_v3/billing/coupons", app.NeedAdmin, famCode, s.createCoupon)
	s.handle("GET", "/api_v3/billing/coupons", app.NeedAdmin, famCode, s.listCoupons)
	s.handle("DELETE", "/api_v3/billing/coupons/{code}", app.NeedAdmin, famCode, s.deactivateCoupon)

	// Slots (spec: Slots; publishing them is an extension).
	s.handleSlotList("POST", "/api_v3/slots", app.NeedUser, famCode, s.createSlots)
	s.handleSlotList("GET", "/api_v3/slots", app.NeedUser, famCode, s.listSlots)
	s.handleSlotList("GET", "/api_v3/slots/available", app.NeedUser, famCode, s.availableSlots)
	s.handle("DELETE", "/api_v3/slots/{id}", app.NeedUser, famCode, s.deleteSlot)
	s.handle("DELETE", "/api_v3/slots/groups/{groupId}", app.NeedUser, famCode, s.deleteSlotGroup)

	// Visit messages (spec: Visit messages; outside /api_v3, as the spec has them).
	// A request without a token is 400 here (spec: Errors), not 401.
	s.handleThread("GET", "/api/visits/{visit_id}/messages", s.listMessages)
	s.handleThread("POST", "/api/visits/{visit_id}/messages", s.postMessage)
	// Extension: new messages and state changes as server-sent events.
	s.handleThread("GET", "/api/visits/{visit_id}/messages/events", s.messageEvents)

	// Push endpoints and notifications (spec: Push endpoints and notifications).
	s.handle("POST", "/api_v3/endpoints", app.NeedUser, famCode, s.createEndpoint)
	s.handle("GET", "/api_v3/endpoints", app.NeedUser, famCode, s.listEndpoints)
	s.handle("GET", "/api_v3/endpoints/{id}", app.NeedUser, famCode, s.getEndpoint)
	s.handle("DELETE", "/api_v3/endpoints/{id}", app.NeedUser, famCode, s.deleteEndpoint)
	s.handle("GET", "/api_v3/notifications", app.NeedUser, famCode, s.listNotifications)
	s.handle("GET", "/api_v3/notifications/badge", app.NeedUser, famCode, s.badge)
	s.handle("POST", "/api_v3/notifications/badge", app.NeedUser, famCode, s.resetBadge)
	s.handle("PUT", "/api_v3/notifications/{id}", app.NeedUser, famCode, s.readNotification)

	// The webhook's settings and deliveries (spec: Events, "not shown"; admin).
	s.handle("GET", "/api_v3/account/settings", app.NeedAdmin, famCode, s.getAccountSettings)
	s.handle("POST", "/api_v3/account/settings", app.NeedAdmin, famCode, s.setAccountSettings)
	// LiveKit's webhook (extension): its signature is the credential.
	s.handleRaw("POST", "/api_v3/livekit/webhook", app.NeedNone, famCode, s.liveKitWebhook)

	s.handle("GET", "/api_v3/webhooks/deliveries", app.NeedAdmin, famCode, s.listDeliveries)
	s.handle("POST", "/api_v3/webhooks/deliveries/{id}/redeliver", app.NeedAdmin, famCode, s.redeliver)
	s.handle("GET", "/api_v3/webhooks/events", app.NeedAdmin, famCode, s.listEventTypes)
	s.handle("GET", "/api_v3/webhooks/endpoints", app.NeedAdmin, famCode, s.listHookEndpoints)
	s.handle("POST", "/api_v3/webhooks/endpoints", app.NeedAdmin, famCode, s.createHookEndpoint)
	s.handle("DELETE", "/api_v3/webhooks/endpoints/{id}", app.NeedAdmin, famCode, s.deleteHookEndpoint)
	s.handle("GET", "/api_v3/webhooks/endpoints/{id}/deliveries", app.NeedAdmin, famCode, s.listEndpointDeliveries)

	// FHIR R4, read only (extension): the clinic's records in the EHR
	// world's format, on the same credentials and rules.
	s.handle("GET", "/fhir/R4/metadata", app.NeedNone, famFHIR, fhirRoute(s.fhir.Metadata))
	s.handle("GET", "/fhir/R4/{type}", app.NeedUser, famFHIR, fhirRoute(s.fhir.Search))
	s.handle("GET", "/fhir/R4/{type}/{id}", app.NeedUser, famFHIR, fhirRoute(s.fhir.Read))
	s.handleRaw("POST", "/fhir/R4/{type}", app.NeedUser, famFHIR, fhirRoute(s.fhir.Create))
	s.handleRaw("PUT", "/fhir/R4/{type}/{id}", app.NeedUser, famFHIR, fhirRoute(s.fhir.Update))
	s.handle("GET", "/fhir/R4/Patient/{id}/$everything", app.NeedUser, famFHIR, fhirRoute(s.fhir.Everything))
	// SMART App Launch (smart/): the FHIR API's SMART configuration, the
	// authorization server's addresses, and the apps the admin registers.
	s.handleProtocol("GET", "/fhir/R4/.well-known/smart-configuration", http.HandlerFunc(s.smart.Configuration))
	s.handleProtocol("GET", "/oauth/.well-known/openid-configuration", s.smart)
	s.handleProtocol("GET", "/oauth/authorize", s.smart)
	s.handleProtocol("GET", "/oauth/authorize/callback", s.smart)
	s.handleProtocol("POST", "/oauth/token", s.smart)
	s.handleProtocol("GET", "/oauth/keys", s.smart)
	s.handleProtocol("POST", "/oauth/revoke", s.smart)
	s.handleProtocol("POST", "/oauth/introspect", s.smart)
	s.handleProtocol("GET", "/oauth/userinfo", s.smart)
	s.handle("GET", "/api_v3/smart/clients", app.NeedAdmin, famCode, s.listSmartClients)
	s.handle("POST", "/api_v3/smart/clients", app.NeedAdmin, famCode, s.createSmartClient)
	s.handle("DELETE", "/api_v3/smart/clients/{id}", app.NeedAdmin, famCode, s.revokeSmartClient)
	s.handle("GET", "/api_v3/smart/ehrs", app.NeedAdmin, famCode, s.listEHRs)
	s.handle("POST", "/api_v3/smart/ehrs", app.NeedAdmin, famCode, s.connectEHR)
	s.handle("DELETE", "/api_v3/smart/ehrs/{id}", app.NeedAdmin, famCode, s.disconnectEHR)
	s.handle("POST", "/api_v3/smart/ehrs/{id}/links", app.NeedAdmin, famCode, s.linkEHRUser)
	// Text messages (extension; app/sms.go): the sender and its log
	// (admin), a person's own consent, a visit's link by text, and the
	// addresses Twilio calls (its signature is the credential).
	s.handle("GET", "/api_v3/sms/settings", app.NeedAdmin, famCode, s.getSMSSettings)
	s.handle("POST", "/api_v3/sms/settings", app.NeedAdmin, famCode, s.setSMSSettings)
	s.handle("GET", "/api_v3/sms/log", app.NeedAdmin, famCode, s.listSMSLog)
	s.handle("GET", "/api_v3/sms/consent", app.NeedUser, famCode, s.getSMSConsent)
	s.handle("POST", "/api_v3/sms/consent", app.NeedUser, famCode, s.setSMSConsent)
	s.handle("POST", "/api_v3/visits/{id}/text_link", app.NeedUser, famCode, s.textVisitLink)
	// Interpreters (extension; app/interpreters.go): the clinic's, and one
	// brought into a visit's call by its provider.
	s.handle("GET", "/api_v3/interpreters", app.NeedUser, famCode, s.listInterpreters)
	s.handle("POST", "/api_v3/interpreters", app.NeedAdmin, famCode, s.addInterpreter)
	s.handle("DELETE", "/api_v3/interpreters/{id}", app.NeedAdmin, famCode, s.removeInterpreter)
	s.handle("POST", "/api_v3/visits/{id}/interpreter", app.NeedUser, famObject, s.inviteInterpreter)
	s.handleRaw("POST", "/sms/twilio/{clinic}/inbound", app.NeedNone, famCode, s.twilioInbound)
	s.handleRaw("POST", "/sms/twilio/{clinic}/status", app.NeedNone, famCode, s.twilioStatus)
	// Bulk Data export (fhir/export.go).
	s.handle("GET", "/fhir/R4/$export", app.NeedUser, famFHIR, fhirRoute(s.fhir.Kickoff("system")))
	s.handle("GET", "/fhir/R4/Patient/$export", app.NeedUser, famFHIR, fhirRoute(s.fhir.Kickoff("patient")))
	s.handle("GET", "/fhir/R4/Group/{id}/$export", app.NeedUser, famFHIR, fhirRoute(s.fhir.Kickoff("group")))
	s.handle("GET", "/fhir/R4/$export-status/{id}", app.NeedUser, famFHIR, fhirRoute(s.fhir.ExportStatus))
	s.handle("DELETE", "/fhir/R4/$export-status/{id}", app.NeedUser, famFHIR, fhirRoute(s.fhir.CancelExport))
	s.handle("GET", "/fhir/R4/$export-file/{id}/{name}", app.NeedUser, famFHIR, fhirRoute(s.fhir.ExportFile))
	// Scheduling by the standard (fhir/scheduling.go).
	s.handle("GET", "/fhir/R4/Slot", app.NeedUser, famFHIR, fhirRoute(s.fhir.Slots))
	s.handle("GET", "/fhir/R4/Slot/{id}", app.NeedUser, famFHIR, fhirRoute(s.fhir.Slot))
	s.handle("GET", "/fhir/R4/Schedule/{id}", app.NeedUser, famFHIR, fhirRoute(s.fhir.Schedule))
	s.handle("GET", "/fhir/R4/Appointment/$find", app.NeedUser, famFHIR, fhirRoute(s.fhir.Find))
	s.handleRaw("POST", "/fhir/R4/Appointment/$find", app.NeedUser, famFHIR, fhirRoute(s.fhir.Find))
	s.handleRaw("POST", "/fhir/R4/Appointment/$hold", app.NeedUser, famFHIR, fhirRoute(s.fhir.Hold))
	s.handleRaw("POST", "/fhir/R4/Appointment/$book", app.NeedUser, famFHIR, fhirRoute(s.fhir.Book))
	s.handleRaw("PATCH", "/fhir/R4/Appointment/{id}", app.NeedUser, famFHIR, fhirRoute(s.fhir.Patch))

	// Operations.
	s.handle("GET", "/openapi.yaml", app.NeedNone, famCode, s.openAPI)
	s.handle("GET", "/healthz", app.NeedNone, famCode, s.healthz)
	s.handle("GET", "/metrics", app.NeedNone, famCode, s.metrics)
}

package app_test

import (
	"testing"

	"teleclinic/internal/app"
)

// TestValidNPI: CMS's published example 1234567893 passes; a changed
// digit, a wrong length or letters do not.
func TestValidNPI(t *testing.T) {
	for npi, want := range map[string]bool{"1234567893": true, "1245319599": true, "1234567890": false, "1234567894": false,
		"123456789": false, "12345678931": false, "123456789A": false, "": false} {
		if got := app.ValidNPI(npi); got != want {
			t.Errorf("ValidNPI(%q) = %v, want %v", npi, got, want)
		}
	}
}

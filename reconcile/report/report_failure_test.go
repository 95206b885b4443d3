package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"github.com/keel-storage/keel/reconcile/report/reporttest"
	"strings"
	"testing"
)

// A check that could not run writes a #Report that says so: not OK, no
// findings, the reason in error; and a JUnit document with one test case in
// error.
func TestFailedReport(t *testing.T) {
	r := FailedReport(HostInfo{Mode: "audit"}, errors.New("lvm is not installed"))
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	reporttest.ValidateJSON(t, b.Bytes())
	var got struct {
		Error    string `json:"error"`
		Findings []any  `json:"findings"`
		Summary  struct {
			OK bool `json:"ok"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Error != "lvm is not installed" || got.Summary.OK || got.Findings == nil || len(got.Findings) != 0 {
		t.Errorf("failed report JSON: %s", b.String())
	}

	b.Reset()
	if err := r.WriteJUnitFailure(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Errors int `xml:"errors,attr"`
		Suite  struct {
			Case struct {
				Name  string `xml:"name,attr"`
				Error string `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if doc.Errors != 1 || doc.Suite.Case.Name != "keel.check" || !strings.Contains(doc.Suite.Case.Error, "lvm is not installed") {
		t.Errorf("failed report JUnit:\n%s", b.String())
	}
}

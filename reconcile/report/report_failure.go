package report

import (
	"encoding/xml"
	"io"
)

// FailedReport is the report of a check that could not judge the host:
// no findings, Summary.OK false, and Error saying why. Its JSON form is a
// #Report (schema/report.cue), so a consumer of `keel check --format json`
// reads a failed check as not OK instead of finding no document.
func FailedReport(host HostInfo, err error) Report {
	r := NewReport(host, nil, nil, nil)
	r.Summary.OK = false
	r.Error = err.Error()
	return r
}

// junitErrorSuites is the JUnit document of a check that could not run:
// one test case, keel.check, in error (JUnit's "error" is a test that could
// not run, as opposed to a "failure").
type junitErrorSuites struct {
	XMLName xml.Name `xml:"testsuites"`
	Name    string   `xml:"name,attr"`
	Tests   int      `xml:"tests,attr"`
	Errors  int      `xml:"errors,attr"`
	Suite   struct {
		Name   string `xml:"name,attr"`
		Tests  int    `xml:"tests,attr"`
		Errors int    `xml:"errors,attr"`
		Case   struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Error     struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// WriteJUnitFailure writes the JUnit form of a FailedReport: one test case
// (keel.check) in error with the reason, so that a CI job shows the check
// as broken rather than as passing with no tests.
func (r Report) WriteJUnitFailure(w io.Writer) error {
	var doc junitErrorSuites
	doc.Name, doc.Tests, doc.Errors = "keel", 1, 1
	doc.Suite.Name, doc.Suite.Tests, doc.Suite.Errors = "keel check "+r.Host.Name, 1, 1
	doc.Suite.Case.Name, doc.Suite.Case.Classname = "keel.check", "keel"
	doc.Suite.Case.Error.Message = "keel could not check the host"
	doc.Suite.Case.Error.Text = r.Error
	return writeXML(w, doc)
}

// writeXML writes doc as an indented XML document with its header.
func writeXML(w io.Writer, doc any) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

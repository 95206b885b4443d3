package plan

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

func TestCatalogueSortedAndUnique(t *testing.T) {
	ids := make([]string, len(Catalogue))
	for i, r := range Catalogue {
		ids[i] = string(r.ID)
		if r.Title == "" || r.Doc == "" {
			t.Errorf("%s: empty title or doc", r.ID)
		}
		if !regexp.MustCompile(`^[a-z]+(\.[a-z_]+)+$`).MatchString(string(r.ID)) {
			t.Errorf("%s: ID is not dotted lowercase", r.ID)
		}
	}
	if !sort.StringsAreSorted(ids) {
		t.Errorf("catalogue not sorted by ID: %v", ids)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			t.Errorf("duplicate ID %s", ids[i])
		}
	}
}

// The issue names these IDs; none may go missing.
func TestCatalogueHasRequiredIDs(t *testing.T) {
	required := strings.Fields(`lvm.scan_lvs lvm.global_filter lvm.devices_file vg.missing vg.incomplete
	vg.inactive vdo.missing vdo.overcommit vdo.threads vdo.max_discard vdo.compression vdo.deduplication
	vdo.slab_remainder vdo.memory vdo.mode vdo.index vdo.usage vdo.dedupe_timeouts vdo.layout.head_off_fast
	vdo.layout.journal_off_fast thin.chunk_size thin.stripe_alignment thin.zeroing thin.metadata_size
	thin.data_usage thin.metadata_usage thin.health thin.on_vdo bcache.missing bcache.tunable
	bcache.cache_mode bcache.state pve.discard_on_remove activation.pvscan_on_lvs`)
	for _, id := range required {
		if _, ok := Lookup(FindingID(id)); !ok {
			t.Errorf("required finding %s not in the catalogue", id)
		}
	}
	if r, _ := Lookup("vdo.layout.journal_off_fast"); r.Severity != Critical {
		t.Errorf("vdo.layout.journal_off_fast is %v, want critical", r.Severity)
	}
}

// docs/findings.md must document exactly the catalogue's IDs, each with the
// same severity.
func TestFindingsDocMatchesCatalogue(t *testing.T) {
	b, err := os.ReadFile("../../docs/findings.md")
	if err != nil {
		t.Fatal(err)
	}
	head := regexp.MustCompile("(?m)^## `([^`]+)`\\s*\n+- \\*\\*Severity:\\*\\* ([a-z]+)")
	doc := map[FindingID]string{}
	for _, m := range head.FindAllStringSubmatch(string(b), -1) {
		if _, dup := doc[FindingID(m[1])]; dup {
			t.Errorf("docs/findings.md documents %s twice", m[1])
		}
		doc[FindingID(m[1])] = m[2]
	}
	if n := strings.Count(string(b), "\n## `"); n != len(doc) {
		t.Errorf("docs/findings.md has %d ID sections but %d with a severity line", n, len(doc))
	}
	for _, r := range Catalogue {
		sev, ok := doc[r.ID]
		if !ok {
			t.Errorf("docs/findings.md does not document %s", r.ID)
			continue
		}
		if sev != r.Severity.String() {
			t.Errorf("%s: docs say %s, catalogue says %s", r.ID, sev, r.Severity)
		}
		delete(doc, r.ID)
	}
	for id := range doc {
		t.Errorf("docs/findings.md documents %s, which is not in the catalogue", id)
	}
}

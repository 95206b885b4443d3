package model

import "testing"

func TestEmptyListsKeepsValues(t *testing.T) {
	type inner struct{ L []int }
	v := struct {
		A []string
		B []string
		M map[string]inner
		P *inner
	}{B: []string{"x"}, M: map[string]inner{"k": {}}}
	EmptyLists(&v)
	if v.A == nil || len(v.A) != 0 || len(v.B) != 1 || v.M["k"].L == nil || v.P != nil {
		t.Fatalf("EmptyLists: %+v", v)
	}
}

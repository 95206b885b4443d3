package model

import "reflect"

// EmptyLists replaces every nil slice reachable from v (a pointer) with an
// empty one, so that a JSON consumer reads [] for "none" and never null:
// jq's `.vgs[].pvs | length` and a Python loop over a field then work on
// every host, whether or not the probe found something to list. Maps are
// walked through copies of their values; pointers and interfaces are
// followed; nil pointers (a pool with no status, a host that is not
// Proxmox) stay null, since there null means "not there", not "none".
func EmptyLists(v any) {
	fill(reflect.ValueOf(v))
}

func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			fill(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.IsNil() {
			if v.CanSet() {
				v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			}
			return
		}
		for i := range v.Len() {
			fill(v.Index(i))
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() && v.CanSet() {
			v.Set(reflect.MakeMap(v.Type()))
			return
		}
		for _, k := range v.MapKeys() {
			c := reflect.New(v.Type().Elem()).Elem()
			c.Set(v.MapIndex(k))
			fill(c)
			v.SetMapIndex(k, c)
		}
	}
}

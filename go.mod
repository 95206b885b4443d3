module github.com/keel-storage/keel

go 1.25.0

package listing

import (
	"errors"
	"fmt"
	"strings"
)

// Stable error codes of an [Error].
const (
	// CodeSyntax: the listing is not JSON.
	CodeSyntax = "listing_json_syntax"
	// CodeShape: the listing is JSON but not in the shape its API documents
	// (a member of the wrong type, a price that is no decimal number, a
	// model id that is no author/name slug).
	CodeShape = "listing_shape"
	// CodeFetch: the listing could not be fetched (a network error, or an
	// HTTP error status after the retries).
	CodeFetch = "listing_fetch"
	// CodeNotFound: the API answered 404 for the listing, or a saved
	// listing file does not exist.
	CodeNotFound = "listing_not_found"
	// CodeRead: a saved listing file could not be read.
	CodeRead = "listing_read"
	// CodeEmpty: the model list lists no models; an import never removes a
	// whole catalog on the word of an empty listing.
	CodeEmpty = "listing_empty"
)

// Error is one problem with a listing, located: Where is the file or URL,
// Pointer a JSON pointer into it ("" for the whole document or when the
// problem is not in its content).
type Error struct {
	// Code is one of the Code constants.
	Code string
	// Where is the file path or URL of the listing.
	Where string
	// Pointer locates the offending value in the listing's JSON.
	Pointer string
	// Line is the 1-based line of a syntax error, 0 otherwise.
	Line int
	// Message says what is wrong.
	Message string
}

// Error renders WHERE#POINTER: CODE: MESSAGE (or WHERE:LINE for syntax).
func (e *Error) Error() string {
	loc := e.Where
	switch {
	case e.Pointer != "":
		loc += "#" + e.Pointer
	case e.Line > 0:
		loc += fmt.Sprintf(":%d", e.Line)
	}
	return loc + ": " + e.Code + ": " + e.Message
}

// Errors is every problem found in one listing.
type Errors []*Error

// Error renders one problem a line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// maxErrors bounds how many problems one listing reports: past it, the
// listing is plainly of another shape and more lines would not help.
const maxErrors = 20

// errs collects problems, located, up to maxErrors.
type errs struct {
	where string
	list  Errors
	extra int
}

func (c *errs) add(code, pointer, format string, args ...any) {
	if len(c.list) >= maxErrors {
		c.extra++
		return
	}
	c.list = append(c.list, &Error{Code: code, Where: c.where, Pointer: pointer, Message: fmt.Sprintf(format, args...)})
}

func (c *errs) err() error {
	if len(c.list) == 0 {
		return nil
	}
	if c.extra > 0 {
		c.list = append(c.list, &Error{Code: CodeShape, Where: c.where, Message: fmt.Sprintf("and %d more problems", c.extra)})
	}
	return c.list
}

// IsNotFound reports whether err says a listing does not exist (a 404, or
// a saved file that is not there).
func IsNotFound(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Code == CodeNotFound
	}
	var es Errors
	if errors.As(err, &es) && len(es) == 1 {
		return es[0].Code == CodeNotFound
	}
	return false
}

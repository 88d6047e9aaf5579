package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/ripple-run/ripple/server"
	"github.com/ripple-run/ripple/server/servertest"
	"github.com/ripple-run/ripple/web"
)

// The web client plugged into a server: the page is at the server's own
// origin, with the same token in its URL.
func Example() {
	ctx := context.Background()
	srv, err := server.New(servertest.New(), server.Config{Token: "secret", Web: web.Handler()})
	if err != nil {
		panic(err)
	}
	if err := srv.Start(ctx); err != nil {
		panic(err)
	}
	defer srv.Stop(ctx)

	page, err := web.PageURL(srv.URL())
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.HasSuffix(page, "/?token=secret"))
	res, err := http.Get(page)
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.Status, res.Header.Get("Content-Type"), strings.Contains(string(body), "<title>ripple</title>"))
	// Output:
	// true
	// 200 OK text/html; charset=utf-8 true
}

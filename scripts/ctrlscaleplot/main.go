// Command ctrlscaleplot draws the cost-growth plot of the controller-at-scale benchmark (time
// vs partitions, docs/performance.md "Controller at scale") from the table that
// scripts/controller-scale.sh prints:
//
//	go run . -in table.txt -out ../../docs/images/controller-scale.png
//
// It is its own module so that the plotting library stays out of the broker's go.mod.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"image/color"
	"io"
	"os"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// row is one line of the table: partitions and the measured seconds.
type row struct {
	partitions                 float64
	create, shutdown, failover float64
	rejoin                     float64
}

// parse reads the table: a header line starting with "partitions", then one line per count
// with the columns partitions, create-s, shutdown-s, leaders, rejoin-s, failover-s, rss.
func parse(r io.Reader) ([]row, error) {
	var rows []row
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] == "partitions" {
			continue
		}
		if len(f) < 6 {
			return nil, fmt.Errorf("line %d: %d columns, want at least 6: %q", line, len(f), sc.Text())
		}
		var v [6]float64
		for i := range v {
			x, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d column %d: %q is not a number", line, i+1, f[i])
			}
			v[i] = x
		}
		rows = append(rows, row{partitions: v[0], create: v[1], shutdown: v[2], rejoin: v[4], failover: v[5]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no rows in the table")
	}
	return rows, nil
}

func main() {
	in := flag.String("in", "-", "table printed by scripts/controller-scale.sh (- for stdin)")
	out := flag.String("out", "controller-scale.png", "PNG to write")
	title := flag.String("title", "Controller at scale: 3 brokers, RF=3, 6 s ZooKeeper session", "plot title")
	flag.Parse()
	r := io.Reader(os.Stdin)
	if *in != "-" {
		f, err := os.Open(*in)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		r = f
	}
	rows, err := parse(r)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ctrlscaleplot:", err)
		os.Exit(1)
	}
	p := plot.New()
	p.Title.Text = *title
	p.X.Label.Text = "partitions (log scale)"
	p.Y.Label.Text = "seconds (log scale)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = false, false // bottom right: the lines rise to the right
	p.Add(plotter.NewGrid())
	series := []struct {
		name string
		get  func(row) float64
		c    color.RGBA
	}{
		{"topic creation (ISRs full, brokers agree)", func(r row) float64 { return r.create }, color.RGBA{R: 200, A: 255}},
		{"controlled shutdown (SIGTERM to exit, leaders moved)", func(r row) float64 { return r.shutdown }, color.RGBA{G: 140, A: 255}},
		{"controller failover after kill -9 (incl. 6 s session)", func(r row) float64 { return r.failover }, color.RGBA{B: 220, A: 255}},
	}
	for i, s := range series {
		pts := make(plotter.XYs, 0, len(rows))
		for _, r := range rows {
			if v := s.get(r); v > 0 {
				pts = append(pts, plotter.XY{X: r.partitions, Y: v})
			}
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ctrlscaleplot:", err)
			os.Exit(1)
		}
		l.Color, sc.Color = s.c, s.c
		sc.Shape = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}}[i]
		p.Add(l, sc)
		p.Legend.Add(s.name, l, sc)
	}
	if err := p.Save(8*vg.Inch, 5*vg.Inch, *out); err != nil {
		fmt.Fprintln(os.Stderr, "ctrlscaleplot:", err)
		os.Exit(1)
	}
}

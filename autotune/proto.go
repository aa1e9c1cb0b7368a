package autotune

import (
	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/core/loops"
)

// ToProto converts schedules to their tuning-database form.
func ToProto(scheds []loops.Schedule) []*api.StmtSchedule {
	out := make([]*api.StmtSchedule, len(scheds))
	for i, s := range scheds {
		p := &api.StmtSchedule{
			VectorWidth:   s.VectorWidth,
			VectorAxis:    s.VectorAxis,
			Order:         s.Order,
			ParallelDepth: int32(s.ParallelDepth),
			Scatter:       s.Scatter,
			Atomic:        s.Atomic,
			Threads:       int32(s.Threads),
			LaneSize:      s.LaneSize,
		}
		if t := s.Tiling; t != nil {
			pt := &api.Tiling{Loops: t.Loops, Parallel: int32(t.Parallel), Vector: t.Vector, AccAt: int32(t.AccAt)}
			for _, sp := range t.Splits {
				pt.Splits = append(pt.Splits, &api.Split{Axis: sp.Axis, Factors: sp.Factors, Size: sp.Size})
			}
			for _, u := range t.Unroll {
				pt.Unroll = append(pt.Unroll, &api.Unroll{Loop: u.Loop, Factor: int32(u.Factor)})
			}
			for _, pk := range t.Packs {
				pt.Packs = append(pt.Packs, &api.Pack{Read: int32(pk.Read), At: int32(pk.At)})
			}
			for _, r := range t.Relayouts {
				pt.Relayouts = append(pt.Relayouts, &api.Relayout{Tensor: r.Tensor, Dim: int32(r.Dim)})
			}
			pt.Prefetch = t.Prefetch
			p.Tiling = pt
		}
		if g := s.GPU; g != nil {
			pg := &api.GPUTiling{}
			for _, a := range g.Spatial {
				pg.Spatial = append(pg.Spatial, &api.GPUTiling_Axis{Axis: a.Axis, Threads: a.Threads, Regs: a.Regs})
			}
			for _, st := range g.Steps {
				pg.Steps = append(pg.Steps, &api.GPUTiling_Step{Axis: st.Axis, Tile: st.Tile})
			}
			for _, r := range g.Stage {
				pg.Stage = append(pg.Stage, int32(r))
			}
			p.Gpu = pg
		}
		if g := s.GPUReduce; g != nil {
			p.GpuReduce = &api.GPUReduction{Threads: g.Threads}
		}
		if t := s.MMA; t != nil {
			p.Mma = &api.MMATiling{Bm: t.BM, Bn: t.BN, Warps: t.Warps}
		}
		if g := s.Group; g != nil {
			pg := &api.GroupTiling{Loops: g.Loops, Parallel: int32(g.Parallel), Vector: g.Vector}
			for _, sp := range g.Splits {
				pg.Splits = append(pg.Splits, &api.Split{Axis: sp.Axis, Factors: sp.Factors})
			}
			for _, a := range g.AccAt {
				pg.AccAt = append(pg.AccAt, int32(a))
			}
			p.Group = pg
		}
		out[i] = p
	}
	return out
}

// FromProto converts stored schedules back; the result still has to pass
// lowering's checks, which Build applies.
func FromProto(ps []*api.StmtSchedule) ([]loops.Schedule, error) {
	out := make([]loops.Schedule, len(ps))
	for i, p := range ps {
		if p == nil {
			return nil, errors.Errorf("schedule %d is missing", i)
		}
		s := loops.Schedule{
			VectorWidth:   p.VectorWidth,
			VectorAxis:    p.VectorAxis,
			Order:         p.Order,
			ParallelDepth: int(p.ParallelDepth),
			Scatter:       p.Scatter,
			Atomic:        p.Atomic,
			Threads:       int(p.Threads),
			LaneSize:      p.LaneSize,
		}
		if pt := p.Tiling; pt != nil {
			t := &loops.Tiling{Loops: pt.Loops, Parallel: int(pt.Parallel), Vector: pt.Vector, AccAt: int(pt.AccAt)}
			for _, sp := range pt.Splits {
				t.Splits = append(t.Splits, loops.Split{Axis: sp.Axis, Factors: sp.Factors, Size: sp.GetSize()})
			}
			for _, u := range pt.Unroll {
				t.Unroll = append(t.Unroll, loops.Unroll{Loop: u.Loop, Factor: int(u.Factor)})
			}
			for _, pk := range pt.Packs {
				t.Packs = append(t.Packs, loops.Pack{Read: int(pk.Read), At: int(pk.At)})
			}
			for _, r := range pt.Relayouts {
				t.Relayouts = append(t.Relayouts, loops.Relayout{Tensor: r.Tensor, Dim: int(r.Dim)})
			}
			t.Prefetch = pt.GetPrefetch()
			s.Tiling = t
		}
		if pg := p.Gpu; pg != nil {
			g := &loops.GPUTiling{}
			for _, a := range pg.Spatial {
				g.Spatial = append(g.Spatial, loops.GPUAxis{Axis: a.Axis, Threads: a.Threads, Regs: a.Regs})
			}
			for _, st := range pg.Steps {
				g.Steps = append(g.Steps, loops.GPUStep{Axis: st.Axis, Tile: st.Tile})
			}
			for _, r := range pg.Stage {
				g.Stage = append(g.Stage, int(r))
			}
			s.GPU = g
		}
		if pg := p.GpuReduce; pg != nil {
			s.GPUReduce = &loops.GPUReduction{Threads: pg.Threads}
		}
		if pt := p.Mma; pt != nil {
			s.MMA = &loops.MMATiling{BM: pt.Bm, BN: pt.Bn, Warps: pt.Warps}
		}
		if pg := p.Group; pg != nil {
			g := &loops.GroupTiling{Loops: pg.Loops, Parallel: int(pg.Parallel), Vector: pg.Vector}
			for _, sp := range pg.Splits {
				g.Splits = append(g.Splits, loops.Split{Axis: sp.Axis, Factors: sp.Factors})
			}
			for _, a := range pg.AccAt {
				g.AccAt = append(g.AccAt, int(a))
			}
			s.Group = g
		}
		out[i] = s
	}
	return out, nil
}

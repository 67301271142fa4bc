"""The loss operators (vm/ops/nn/loss.py) match torch.nn.functional for every reduction
code, weights, ignore_index, label smoothing, class-probability targets, and BCE's clamp."""

import numpy as np
import pytest

from vm.ops.registry import lookup

torch = pytest.importorskip("torch")
F = torch.nn.functional


def K(name: str):
    return lookup("aten::" + name).kernel


def test_losses_match_torch() -> None:
    rng = np.random.default_rng(0)
    def K(n): return lookup('aten::'+n).kernel
    x=rng.standard_normal((4,5)).astype(np.float32); t=rng.standard_normal((4,5)).astype(np.float32)
    T=torch.from_numpy
    def ck(a,b,msg):
        b=b.numpy(); assert a.dtype==b.dtype and a.shape==b.shape and np.allclose(a,b,rtol=1e-5,atol=1e-6,equal_nan=True),(msg,a,b)
    for r,rn in ((0,'none'),(1,'mean'),(2,'sum')):
        ck(K('mse_loss')(x,t,r),F.mse_loss(T(x),T(t),reduction=rn),'mse')
        ck(K('l1_loss')(x,t,r),F.l1_loss(T(x),T(t),reduction=rn),'l1')
        for b in (0.,0.5,1.):
            ck(K('smooth_l1_loss')(x,t,r,b),F.smooth_l1_loss(T(x),T(t),reduction=rn,beta=b),'sl1')
            if b: ck(K('huber_loss')(x,t,r,b),F.huber_loss(T(x),T(t),reduction=rn,delta=b),'hub')
        p=1/(1+np.exp(-x)); p[0,0]=0; p[1,1]=1; q=(t>0).astype(np.float32); w=rng.random(5).astype(np.float32)
        ck(K('binary_cross_entropy')(p,q,None,r),F.binary_cross_entropy(T(p),T(q),reduction=rn),'bce')
        ck(K('binary_cross_entropy')(p,q,w,r),F.binary_cross_entropy(T(p),T(q),weight=T(w),reduction=rn),'bcew')
        for shape,tshape in (((4,5),(4,)),((5,),()),((2,5,3,2),(2,3,2))):
            xx=rng.standard_normal(shape).astype(np.float32); tt=rng.integers(0,5,tshape)
            if tt.ndim: tt.flat[0]=-100
            for ww in (None,w):
                for ls in (0.,0.2):
                    ck(K('cross_entropy_loss')(xx,tt,ww,r,-100,ls),F.cross_entropy(T(xx),torch.from_numpy(np.asarray(tt)),weight=None if ww is None else T(ww),reduction=rn,label_smoothing=ls),('ce',shape,ls,ww is None))
                ck(K('nll_loss_nd')(xx,tt,ww,r,-100),F.nll_loss(T(xx),torch.from_numpy(np.asarray(tt)),weight=None if ww is None else T(ww),reduction=rn),'nll')
            pt=np.abs(rng.standard_normal(shape)).astype(np.float32); pt/=pt.sum(axis=1 if len(shape)>1 else 0,keepdims=True)
            for ls in (0.,0.2):
                ck(K('cross_entropy_loss')(xx,pt,None,r,-100,ls),F.cross_entropy(T(xx),T(pt),reduction=rn,label_smoothing=ls),'ceprob')
                ck(K('cross_entropy_loss')(xx,pt,w,r,-100,ls),F.cross_entropy(T(xx),T(pt),weight=T(w),reduction=rn,label_smoothing=ls),'ceprobw')


def test_mse_loss_out_overload_writes_the_buffer() -> None:
    """TorchScript's aten::mse_loss.out writes into ``out`` when it fits, returning it."""
    x = np.arange(4, dtype=np.float32)
    buf = np.empty((), np.float32)
    got = lookup("aten::mse_loss.out").kernel(x, x + 1, 1, buf)
    assert got is buf and float(buf) == 1.0


def test_bad_reduction_code_raises() -> None:
    with pytest.raises(ValueError):
        K("mse_loss")(np.zeros(2), np.zeros(2), 3)

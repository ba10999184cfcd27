"""examples/python/torch_trainer.py: a PyTorch model (a 784-128-10 MLP on
Fashion-MNIST) whose parameters live on rdmaflow's ps tasks. Each step a
worker pulls the parameters (one-sided READs into registered memory that
torch uses without a copy), lets torch's autograd compute the gradients,
and pushes them to the ps tasks, which apply plain gradient descent
(TensorFlow's GradientDescentOptimizer, the same rule as torch.optim.SGD).
Checkpoints, recovery and hooks are those of a MonitoredTrainingSession.
The same program runs once per task, the classic flags as trainer.py's:

  H="--ps_hosts=127.0.0.1:2222,127.0.0.1:2223
     --worker_hosts=127.0.0.1:2224,127.0.0.1:2225"
  python3 torch_trainer.py $H --job_name=ps --task_index=0 &
  python3 torch_trainer.py $H --job_name=ps --task_index=1 &
  python3 torch_trainer.py $H --job_name=worker --task_index=1 &
  python3 torch_trainer.py $H --job_name=worker --task_index=0

or `rf-launch --ps 2 --workers 2 -- python3 torch_trainer.py`. The chief
prints the test accuracy; `python3 torch_trainer.py --torch_only` trains
the same model with torch.optim.SGD alone, the same number of steps, and
prints its test accuracy for comparison. Needs Debian's python3-torch.
"""

import argparse
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import fashion_mnist
import rdmaflow as tf
import rdmaflow.ps


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 128)
        self.fc2 = torch.nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def accuracy(model, x, y):
    with torch.no_grad():
        pred = model(torch.from_numpy(x)).argmax(dim=1).numpy()
    return float(np.mean(pred == y))


def torch_only(flags, model, batches, test):
    """The same model and steps with torch.optim.SGD alone."""
    opt = torch.optim.SGD(model.parameters(), lr=flags.learning_rate)
    t0 = time.perf_counter()
    for _ in range(flags.train_steps):
        bx, by = next(batches)
        opt.zero_grad()
        F.cross_entropy(model(torch.from_numpy(bx)),
                        torch.from_numpy(by)).backward()
        opt.step()
    t = time.perf_counter() - t0
    print("torch alone: %.1f us per step (%d steps)"
          % (t / flags.train_steps * 1e6, flags.train_steps))
    print("torch alone: test accuracy %.4f" % accuracy(model, *test))


def train(flags, server, model, batches, test):
    is_chief = flags.task_index == 0
    initial = {n: p.detach().numpy() for n, p in model.named_parameters()}
    params = dict(model.named_parameters())
    t_pull = t_torch = t_push = 0.0
    steps = 0
    with rdmaflow.ps.Session(
            server, initial, tf.train.GradientDescentOptimizer(
                flags.learning_rate),
            is_chief=is_chief, checkpoint_dir=flags.checkpoint_dir or None,
            hooks=[tf.train.StopAtStepHook(last_step=flags.train_steps)],
            apply=flags.apply) as sess:
        while not sess.should_stop():
            t0 = time.perf_counter()
            values = sess.pull()
            if any(v is None for v in values.values()):
                break  # the job ended while this worker recovered
            for name, value in values.items():
                params[name].data = torch.from_numpy(value)
            t1 = time.perf_counter()
            bx, by = next(batches)
            model.zero_grad()
            F.cross_entropy(model(torch.from_numpy(bx)),
                            torch.from_numpy(by)).backward()
            grads = {n: p.grad.numpy() for n, p in params.items()}
            t2 = time.perf_counter()
            sess.push(grads)
            t3 = time.perf_counter()
            t_pull += t1 - t0
            t_torch += t2 - t1
            t_push += t3 - t2
            steps += 1
    if steps:
        print("step time: pull %.1f us, torch %.1f us, push %.1f us "
              "(%d steps)" % (t_pull / steps * 1e6, t_torch / steps * 1e6,
                              t_push / steps * 1e6, steps))
    if is_chief:
        for name, value in sess.values().items():
            params[name].data = torch.from_numpy(value)
        print("test accuracy %.4f" % accuracy(model, *test))
    sys.stdout.flush()


def main(argv):
    flags = FLAGS
    torch.manual_seed(flags.seed)
    torch.set_num_threads(1)
    model = Net()
    if flags.torch_only or flags.job_name != "ps":
        train_x, train_y = fashion_mnist.load("train", flags.data_dir)
        test = fashion_mnist.load("test", flags.data_dir)
        batches = fashion_mnist.batches(train_x, train_y, flags.batch_size,
                                        flags.seed * 1000 + flags.task_index)
    if flags.torch_only:
        torch_only(flags, model, batches, test)
        return 0
    cluster = tf.train.ClusterSpec({"ps": flags.ps_hosts.split(","),
                                    "worker": flags.worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=flags.job_name,
                             task_index=flags.task_index,
                             protocol=flags.protocol)
    if flags.job_name == "ps":
        server.join()
        return 0
    train(flags, server, model, batches, test)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ps_hosts", type=str, default="")
    parser.add_argument("--worker_hosts", type=str, default="")
    parser.add_argument("--job_name", type=str, default="")
    parser.add_argument("--task_index", type=int, default=0)
    parser.add_argument("--protocol", type=str, default=None)
    parser.add_argument("--apply", type=str, default=None,
                        help="ps (default) or worker")
    # 25 epochs of 500 at 0.05: the last iterate of constant-rate SGD
    # wanders less than at 100 and 0.1 (whose test accuracy moves by 0.01
    # from one step to the next), so one run compares with torch alone
    parser.add_argument("--train_steps", type=int, default=3000)
    parser.add_argument("--batch_size", type=int, default=500)
    parser.add_argument("--learning_rate", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data_dir", type=str, default=None)
    parser.add_argument("--checkpoint_dir", type=str, default="")
    parser.add_argument("--torch_only", action="store_true",
                        help="train with torch alone and print its test "
                        "accuracy")
    FLAGS, unparsed = parser.parse_known_args()
    if unparsed:
        parser.error("unknown arguments: %s" % " ".join(unparsed))
    tf.app.run(main=main, argv=[sys.argv[0]])

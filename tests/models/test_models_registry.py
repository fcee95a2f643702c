"""Registry sweep (every model builds, runs a batch of 2, finite logits), parameter counts against published figures,
shape checks and the text CNN's GloVe initialisation."""

from __future__ import annotations

import functools

import pytest
import torch

from adacal.errors import InputError, UnknownNameError
from adacal.models import build_model, count_parameters, default_model, model_names, rebuild_options
from adacal.models import check_input_shape, check_model_input, model_input_kind, model_options_for_dataset

NATURAL_INPUT = {"image": (3, 32, 32), "vector": (64,), "text": (40,)}
HEAVY = {"resnet50", "resnet110", "resnet110-bottleneck", "wrn-26-10", "densenet121"}

# Published parameter counts (10 classes): He et al. 2016 (ResNet-20 0.27M, ResNet-110 1.7M), Zagoruyko & Komodakis
# 2016 (WRN-28-10 36.5M = the reference code's depth-26 form with 4 blocks per stage), kuangliu/pytorch-cifar
# ResNet-50 23.5M, Huang et al. DenseNet-121 (k=32) CIFAR form ~7.0M.
PUBLISHED = {
    "resnet20": (0.27e6, 0.01),
    "resnet110": (1.7e6, 0.02),
    "wrn-26-10": (36.5e6, 0.01),
    "resnet50": (23.5e6, 0.01),
    "densenet121": (7.0e6, 0.02),
}


@pytest.fixture(autouse=True)
def one_thread():
    """Batches of 2 gain nothing from intra-op threads, and on a shared, busy CPU thread hand-offs dominate."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@functools.lru_cache(maxsize=None)
def built(name: str):
    torch.manual_seed(0)
    options = {"vocab_size": 200} if name == "textcnn" else {}
    return build_model(name, num_classes=10, input_shape=NATURAL_INPUT[model_input_kind(name)], **options)


def sample(name: str, n: int = 2) -> torch.Tensor:
    kind = model_input_kind(name)
    if kind == "text":
        return torch.randint(0, 200, (n, *NATURAL_INPUT[kind]))
    return torch.randn(n, *NATURAL_INPUT[kind])


@pytest.mark.parametrize("name", model_names())
def test_every_model_builds_and_runs(name):
    torch.manual_seed(0)
    model = built(name)
    x = sample(name)
    if name in HEAVY:
        model.eval()
        with torch.no_grad():
            logits = model(x)
    else:
        model.train()
        logits = model(x)
        logits.sum().backward()
        grads = [p.grad for p in model.parameters() if p.requires_grad]
        assert grads and all(g is not None and torch.isfinite(g).all() for g in grads)
    assert logits.shape == (2, 10) and torch.isfinite(logits).all()
    assert model.adacal_model_name == name


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameter_counts_match_published_figures(name):
    expected, tolerance = PUBLISHED[name]
    assert abs(count_parameters(built(name)) - expected) <= tolerance * expected


def test_reference_resnet110_is_the_bottleneck_form():
    # focal_calibration / AdaFocal's 'resnet110' = kuangliu ResNet with Bottleneck [3, 4, 26, 3]
    assert count_parameters(built("resnet110-bottleneck")) == 45_864_522


def test_torchvision_models_and_suggestions():
    model = build_model("torchvision:resnet18", num_classes=7, input_shape=(3, 32, 32))
    model.eval()
    with torch.no_grad():
        assert model(torch.randn(2, 3, 32, 32)).shape == (2, 7)
    with pytest.raises(UnknownNameError, match="Did you mean torchvision:resnet50"):
        build_model("torchvision:resnet5", num_classes=7, input_shape=(3, 32, 32))
    with pytest.raises(InputError, match="RGB"):
        build_model("torchvision:resnet18", num_classes=7, input_shape=(1, 32, 32))
    assert "torchvision:resnet18" in model_names(include_torchvision=True)


def test_image_models_accept_other_sizes_and_channels():
    model = build_model("resnet20", num_classes=5, input_shape=(1, 64, 64))
    model.eval()
    with torch.no_grad():
        assert model(torch.randn(2, 1, 64, 64)).shape == (2, 5)


@pytest.mark.parametrize(
    "name, shape, message",
    [
        ("mlp", (3, 32, 32), r"Model 'mlp' reads feature vectors of shape \(D,\), got input shape \(3, 32, 32\)"),
        ("resnet20", (64,), r"reads images of shape \(C, H, W\)"),
        ("resnet20", (3, 4, 4), "at least 8x8"),
        ("textcnn", (3, 32, 32), "token-id sequences"),
        ("mlp", (0,), "positive integers"),
    ],
)
def test_shape_mismatches_are_one_sentence_errors(name, shape, message):
    with pytest.raises(InputError, match=message):
        check_input_shape(name, shape)
    with pytest.raises(InputError, match=message):
        build_model(name, num_classes=10, input_shape=shape, **({"vocab_size": 10} if name == "textcnn" else {}))


def test_kind_and_built_shape_checks():
    with pytest.raises(InputError, match="reads feature vectors .* but the dataset holds token-id sequences"):
        check_input_shape("mlp", (400,), kind="text")
    model = built("mlp")
    check_model_input(model, (64,))
    with pytest.raises(InputError, match=r"built for inputs of shape \(64,\), got inputs of shape \(3, 32, 32\)"):
        check_model_input(model, (3, 32, 32))


def test_build_errors():
    with pytest.raises(UnknownNameError, match="Did you mean 'resnet50'"):
        build_model("resnet51", num_classes=10, input_shape=(3, 32, 32))
    with pytest.raises(InputError, match="num_classes"):
        build_model("mlp", num_classes=1, input_shape=(64,))
    with pytest.raises(InputError, match="does not take option"):
        build_model("mlp", num_classes=10, input_shape=(64,), hiden=(3,))
    with pytest.raises(InputError, match="vocab_size"):
        build_model("textcnn", num_classes=10, input_shape=(40,))
    with pytest.raises(InputError, match="largest kernel"):
        build_model("textcnn", num_classes=10, input_shape=(4,), vocab_size=10)


def test_default_models():
    assert default_model("digits") == "mlp"
    assert default_model("cifar10") == "resnet20" and default_model("svhn") == "resnet20"
    assert default_model("20newsgroups") == "textcnn"
    assert default_model("tiny-imagenet") == "torchvision:resnet50"
    with pytest.raises(UnknownNameError, match="Did you mean 'cifar10'"):
        default_model("cifar-10")


def test_mlp_options_and_learning_digits():
    from adacal.data import BatchLoader, load_dataset

    assert count_parameters(build_model("mlp", num_classes=10, input_shape=(64,), hidden=(32,))) == 64 * 32 + 32 + 330
    digits = load_dataset("digits")
    torch.manual_seed(0)
    model = build_model(default_model("digits"), num_classes=10, input_shape=digits.input_shape)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    loader = BatchLoader(digits.train, 64, dataset=digits, shuffle=True)
    for epoch in range(5):
        loader.set_epoch(epoch)
        for inputs, labels in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(inputs), labels).backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(digits.test.inputs).argmax(1) == digits.test.labels).float().mean().item()
    assert accuracy > 0.9


def test_textcnn_glove_initialisation(tmp_path):
    glove = tmp_path / "glove.txt"
    glove.write_text("hello 0.1 0.2 0.3 0.4\nworld 1 2 3 4\nunused 9 9 9 9\n")
    vocab = ["<pad>", "<unk>", "hello", "world", "rare"]
    model = build_model("textcnn", num_classes=3, input_shape=(10,), vocab_size=5, embeddings=str(glove), vocab=vocab)
    weight = model.embedding.weight.detach()
    assert weight.shape == (5, 4)  # embedding_dim taken from the file
    assert (torch.allclose(weight[2], torch.tensor([0.1, 0.2, 0.3, 0.4]))
            and torch.allclose(weight[3], torch.arange(1.0, 5.0)))
    assert torch.equal(weight[0], torch.zeros(4)) and model.embedding_coverage == pytest.approx(2 / 3)
    assert model(torch.tensor([[2, 3, 4, 0, 0, 0, 0, 0, 0, 0]])).shape == (1, 3)
    with pytest.raises(InputError, match="embedding dimension"):
        build_model("textcnn", num_classes=3, input_shape=(10,), vocab_size=5, embeddings=str(glove), vocab=vocab,
                    embedding_dim=8)
    with pytest.raises(InputError, match="vocab"):
        build_model("textcnn", num_classes=3, input_shape=(10,), vocab_size=5, embeddings=str(glove))
    with pytest.raises(InputError, match="does not exist"):
        build_model("textcnn", num_classes=3, input_shape=(10,), vocab_size=5, embeddings=str(tmp_path / "no.txt"),
                    vocab=vocab)
    # word2vec's text format: a first line "<words> <dimension>" is a header (it was read as a 1-dimensional word)
    glove.write_text("2 4\nhello 0.1 0.2 0.3 0.4\nworld 1 2 3 4\n")
    model = build_model("textcnn", num_classes=3, input_shape=(10,), vocab_size=5, embeddings=str(glove), vocab=vocab)
    assert model.embedding.weight.shape == (5, 4) and model.embedding_coverage == pytest.approx(2 / 3)
    # NaN / Inf / float32-overflowing vectors would only show up as a NaN loss blamed on the learning rate
    for bad in ("hello nan 0.2 0.3 0.4\n", "hello 0.1 inf 0.3 0.4\n", "hello 1e400 0.2 0.3 0.4\n",
                "hello 1e39 0 0 0\n"):
        glove.write_text(bad)
        with pytest.raises(InputError, match="finite numbers .* on line 1"):
            build_model("textcnn", num_classes=3, input_shape=(10,), vocab_size=5, embeddings=str(glove), vocab=vocab)
    # A damaged .gz stream (zlib.error) raised a traceback
    import gzip

    packed = tmp_path / "glove.txt.gz"
    packed.write_bytes(
        gzip.compress(("".join(f"w{i} 0.1 0.2 0.3 0.4\n" for i in range(300)) + "hello 1 2 3 4\n").encode()))
    damaged = bytearray(packed.read_bytes())
    for i in range(30, 60):
        damaged[i] ^= 0x5A
    packed.write_bytes(bytes(damaged))
    with pytest.raises(InputError, match="Cannot read the embeddings file"):
        build_model("textcnn", num_classes=3, input_shape=(10,), vocab_size=5, embeddings=str(packed), vocab=vocab)


def test_textcnn_ignores_padding_position_of_pad_tokens():
    model = built("textcnn")
    model.eval()
    assert model.embedding.padding_idx == 0 and torch.equal(model.embedding.weight[0], torch.zeros(100))


def test_dataset_options_helpers():
    class FakeText:
        extra = {"vocab_size": 123, "vocab": ["<pad>", "<unk>"]}

    assert model_options_for_dataset("textcnn", FakeText()) == {"vocab_size": 123}
    with_glove = model_options_for_dataset("textcnn", FakeText(), {"embeddings": "g.txt"})
    assert with_glove["vocab"] == FakeText.extra["vocab"]
    assert model_options_for_dataset("mlp", FakeText(), {"hidden": (8,)}) == {"hidden": (8,)}
    assert rebuild_options(with_glove) == {"vocab_size": 123}


@pytest.mark.parametrize(("name", "shape", "options"), [
    ("mlp", (64,), {"hidden": "abc"}),
    ("mlp", (64,), {"hidden": 64}),
    ("mlp", (64,), {"dropout": "x"}),
    ("textcnn", (10,), {"vocab_size": 50, "kernel_sizes": 3}),
    ("textcnn", (10,), {"vocab_size": 50, "num_filters": -1}),
])
def test_option_values_that_break_a_constructor_are_one_sentence(name, shape, options):
    """They raised raw TypeError / ValueError / torch RuntimeError from inside the layers."""
    with pytest.raises(InputError, match=f"Expected options that build model {name} .* which fail"):
        build_model(name, num_classes=10, input_shape=shape, **options)
